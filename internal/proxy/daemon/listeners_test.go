package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/appliance"
	"github.com/queenmq/queen/internal/sdnotify"
)

// listenerChildEnv marks the re-executed test binary that plays queen-proxy under
// socket activation.
const listenerChildEnv = "QUEEN_PROXY_TEST_LISTENER_CHILD"

// TestSystemdListenersChild is the child of TestSystemdListeners: it takes the
// passed sockets and prints what it got.
func TestSystemdListenersChild(t *testing.T) {
	if os.Getenv(listenerChildEnv) == "" {
		t.Skip("run by TestSystemdListeners")
	}
	public, admin, err := systemdListeners(nil, nil, slog.New(slog.DiscardHandler))
	addr := func(ln net.Listener) string {
		if ln == nil {
			return "none"
		}
		return ln.Addr().String()
	}
	fmt.Fprintf(os.Stdout, "RESULT public=%s admin=%s err=%v\n", addr(public), addr(admin), err)
}

// passSockets runs the child with lns as fds 3… and LISTEN_FDNAMES=names, the way
// systemd starts queen-proxy.service from its two sockets, and returns its RESULT.
func passSockets(t *testing.T, names string, lns ...net.Listener) string {
	t.Helper()
	var files []*os.File
	for _, ln := range lns {
		f, err := ln.(*net.TCPListener).File()
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		files = append(files, f)
	}
	// LISTEN_PID must be the child's own PID: set it in a shell that execs.
	cmd := exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ exec "$0" -test.run '^TestSystemdListenersChild$' -test.v`, os.Args[0])
	cmd.ExtraFiles = files
	cmd.Env = []string{listenerChildEnv + "=1", fmt.Sprintf("LISTEN_FDS=%d", len(lns)), "LISTEN_FDNAMES=" + names, "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.HasPrefix(line, "RESULT ") {
			return strings.TrimPrefix(line, "RESULT ")
		}
	}
	t.Fatalf("no RESULT line:\n%s", out)
	return ""
}

func TestSystemdListeners(t *testing.T) {
	t.Parallel()
	listen := func(t *testing.T) net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { ln.Close() })
		return ln
	}

	t.Run("NamedSocketsServeBothListeners", func(t *testing.T) {
		t.Parallel()
		pub, adm := listen(t), listen(t)
		got := passSockets(t, "admin:http", adm, pub)
		require.Equal(t, fmt.Sprintf("public=%s admin=%s err=<nil>", pub.Addr(), adm.Addr()), got)
	})
	t.Run("OnlyHTTPLeavesAdminToTheSetting", func(t *testing.T) {
		t.Parallel()
		pub := listen(t)
		require.Equal(t, fmt.Sprintf("public=%s admin=none err=<nil>", pub.Addr()), passSockets(t, "http", pub))
	})
	t.Run("UnknownNameIsAnError", func(t *testing.T) {
		t.Parallel()
		got := passSockets(t, "queen-proxy.socket", listen(t))
		require.Contains(t, got, `public=none admin=none err=socket "queen-proxy.socket" passed by systemd: queen-proxy serves sockets named "http" and "admin"`)
	})
	t.Run("TwoSocketsUnderOneNameIsAnError", func(t *testing.T) {
		t.Parallel()
		got := passSockets(t, "http:http", listen(t), listen(t))
		require.Contains(t, got, `err=socket "http" passed by systemd: want one stream listener, got 2 descriptors`)
	})
	t.Run("GivenListenersWinWithoutActivation", func(t *testing.T) {
		t.Parallel()
		pub := listen(t)
		p, a, err := systemdListeners(pub, nil, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		require.Equal(t, pub, p)
		require.Nil(t, a)
	})
}

// TestWatchdogKeepAlives plays systemd's watchdog: keep-alives arrive while the
// handlers answer /health, and none while one of them hangs.
func TestWatchdogKeepAlives(t *testing.T) {
	dir, err := os.MkdirTemp("", "qpwd") // unix socket paths are short
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	t.Setenv("WATCHDOG_USEC", "150000")
	t.Setenv("WATCHDOG_PID", fmt.Sprint(os.Getpid()))
	n, err := sdnotify.New()
	require.NoError(t, err)
	require.Equal(t, 150*time.Millisecond, n.WatchdogInterval())

	// run starts the watchdog over handlers; the returned function stops it.
	run := func(handlers ...http.Handler) func() {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		probe := appliance.Probe{Handlers: handlers, Path: "/health"}
		go func() {
			_ = appliance.NewWatchdog(n, probe.Run, slog.New(slog.DiscardHandler)).Run(ctx)
			close(done)
		}()
		return func() { cancel(); <-done }
	}
	read := func(within time.Duration) (string, error) {
		buf := make([]byte, 256)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(within)))
		k, err := conn.Read(buf)
		return string(buf[:k]), err
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })

	stop := run(ok, ok)
	got, err := read(5 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "WATCHDOG=1", got)
	stop()
	for { // drain keep-alives sent before the stop
		if _, err := read(100 * time.Millisecond); err != nil {
			break
		}
	}

	hung := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	stop = run(ok, hung)
	defer stop()
	got, err = read(600 * time.Millisecond) // four watchdog intervals
	var ne net.Error
	require.ErrorAs(t, err, &ne, "a keep-alive (%q) while a handler hangs", got)
	require.True(t, ne.Timeout())
}
