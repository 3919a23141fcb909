package main

import (
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/testlog"
)

// TestBinaryUnderSocketActivation starts the real binary the way systemd starts
// queen.service from queen.socket: the listening socket as fd 3 with LISTEN_FDS=1,
// LISTEN_PID (set through an exec'ing shell, since the child's PID is only known
// once it runs) and LISTEN_FDNAMES=http, plus NOTIFY_SOCKET. PORT names a port that
// is already taken, so the test fails if queen binds HOST:PORT instead. PostgreSQL is
// unreachable: queen must serve /health/live on the passed socket, report the wait
// on NOTIFY_SOCKET, and on SIGTERM send STOPPING=1 and exit 0.
func TestBinaryUnderSocketActivation(t *testing.T) {
	t.Parallel()

	bin := filepath.Join(t.TempDir(), "queen")
	goBuild(t, moduleRoot(t), bin)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	lnFile, err := ln.(*net.TCPListener).File()
	require.NoError(t, err)
	defer lnFile.Close()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	_, takenPort, _ := net.SplitHostPort(taken.Addr().String())

	dir, err := os.MkdirTemp("", "qsd") // unix socket paths are short
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	notifyPath := filepath.Join(dir, "notify")
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyPath, Net: "unixgram"})
	require.NoError(t, err)
	defer notify.Close()
	var mu sync.Mutex
	var msgs []string
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := notify.Read(buf)
			if err != nil {
				return
			}
			mu.Lock()
			msgs = append(msgs, string(buf[:n]))
			mu.Unlock()
		}
	}()
	received := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(msgs, "\n")
	}

	cmd := exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ exec "$0" serve`, bin)
	cmd.ExtraFiles = []*os.File{lnFile} // fd 3
	cmd.Env = []string{"LISTEN_FDS=1", "LISTEN_FDNAMES=http", "NOTIFY_SOCKET=" + notifyPath,
		"HOST=127.0.0.1", "PORT=" + takenPort, "PG_HOST=127.0.0.1", "PG_PORT=" + freePort(t),
		"DB_CONNECTION_TIMEOUT=500", "PATH=/usr/bin:/bin", "FILE_BUFFER_DIR=" + t.TempDir()}
	var stdout, stderr testlog.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			t.Logf("queen killed at cleanup: %v", <-done)
		}
	}()

	base := "http://" + ln.Addr().String()
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/health/live")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 20*time.Second, 50*time.Millisecond, "no answer on the passed socket; stderr:\n%s\nstdout:\n%s", &stderr, &stdout)
	resp, err := http.Get(base + "/health/ready")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "not ready without PostgreSQL")

	require.Eventually(t, func() bool {
		return strings.Contains(received(), "STATUS=waiting for PostgreSQL at 127.0.0.1")
	}, 20*time.Second, 50*time.Millisecond, "notifications: %q", received())
	require.Contains(t, received(), "EXTEND_TIMEOUT_USEC=")
	require.NotContains(t, received(), "READY=1")
	require.Contains(t, stdout.String(), `"source":"systemd socket activation (http=`+ln.Addr().String()+`); HOST and PORT are ignored"`)
	require.Contains(t, stdout.String(), `"level":"WARN","msg":"HOST and PORT are ignored: the listening socket comes from systemd`)
	require.Contains(t, stdout.String(), `"set":["HOST","PORT"]`, "the warning names what was set")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-done:
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			t.Fatalf("exit status %d; stderr:\n%s", exitErr.ExitCode(), &stderr)
		}
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("queen did not stop on SIGTERM")
	}
	require.Eventually(t, func() bool { return strings.Contains(received(), "STOPPING=1") },
		2*time.Second, 20*time.Millisecond, "notifications: %q", received())
}
