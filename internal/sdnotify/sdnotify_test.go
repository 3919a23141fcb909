package sdnotify_test

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/sdnotify"
)

// listen plays the service manager: it binds a datagram socket, points
// NOTIFY_SOCKET at it for this (non-parallel) test, and returns a function that reads
// the next datagram.
func listen(t *testing.T) func() string {
	t.Helper()
	// Unix socket paths are limited to ~108 bytes; t.TempDir() can be longer.
	dir, err := os.MkdirTemp("", "sdnotify")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return func() string {
		t.Helper()
		buf := make([]byte, 4096)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
		n, err := conn.Read(buf)
		require.NoError(t, err)
		return string(buf[:n])
	}
}

func TestNotifierSendsTheProtocol(t *testing.T) {
	next := listen(t)
	t.Setenv("WATCHDOG_USEC", "3000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	n, err := sdnotify.New()
	require.NoError(t, err)
	require.Equal(t, 3*time.Second, n.WatchdogInterval())

	require.NoError(t, n.Status("waiting for PostgreSQL\nattempt 2"))
	require.Equal(t, "STATUS=waiting for PostgreSQL attempt 2", next())
	require.NoError(t, n.ExtendTimeout(1500*time.Millisecond, "still waiting"))
	require.Equal(t, "EXTEND_TIMEOUT_USEC=1500000\nSTATUS=still waiting", next())
	require.NoError(t, n.Ready("ready: serving"))
	require.Equal(t, "READY=1\nSTATUS=ready: serving", next())
	require.NoError(t, n.Watchdog())
	require.Equal(t, "WATCHDOG=1", next())
	require.NoError(t, n.Stopping(""))
	require.Equal(t, "STOPPING=1", next())
}

func TestWatchdogForAnotherProcessIsOff(t *testing.T) {
	listen(t)
	t.Setenv("WATCHDOG_USEC", "3000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()+1))
	n, err := sdnotify.New()
	require.NoError(t, err)
	require.Zero(t, n.WatchdogInterval())
	require.NoError(t, n.Watchdog())
}

func TestMalformedWatchdogIsReported(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "soon")
	n, err := sdnotify.New()
	require.ErrorContains(t, err, "WATCHDOG_USEC")
	require.NotNil(t, n)
	require.Zero(t, n.WatchdogInterval())
}

func TestWithoutSystemdEverythingIsANoOp(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	t.Setenv("WATCHDOG_USEC", "")
	n, err := sdnotify.New()
	require.NoError(t, err)
	require.NoError(t, n.Ready("x"))
	require.NoError(t, n.Stopping("x"))

	var nilNotifier *sdnotify.Notifier
	require.NoError(t, nilNotifier.Ready("x"))
	require.NoError(t, nilNotifier.Watchdog())
	require.Zero(t, nilNotifier.WatchdogInterval())
}

func TestUnreachableSocketIsAnError(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "missing"))
	n, err := sdnotify.New()
	require.NoError(t, err)
	require.ErrorContains(t, n.Ready("x"), "sdnotify")
}
