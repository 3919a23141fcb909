package daemon_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/testlog"
)

// freeAddr returns a loopback address on which nothing listens right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// get fetches url and returns the status and the whole body.
func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

// requireNothingListens requires a TCP connection to addr to be refused.
func requireNothingListens(t *testing.T, addr string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		conn.Close()
	}
	require.Error(t, err, "something listens on %s", addr)
}

func TestPprof(t *testing.T) {
	t.Parallel()

	t.Run("ServesProfilesAndStopsWithTheDaemon", func(t *testing.T) {
		t.Parallel()
		addr := freeAddr(t)
		logs := &testlog.Buffer{}
		tb := serve(t, daemontest.Options{Logs: logs, Env: []string{"LOG_LEVEL=info", "QUEEN_PPROF_ADDR=" + addr}})
		require.Contains(t, logs.String(), "profiling endpoints listening", "logged before ready")
		base := "http://" + addr + "/debug/pprof/"

		status, body := get(t, base)
		require.Equal(t, http.StatusOK, status)
		require.Contains(t, string(body), "goroutine")

		status, body = get(t, base+"profile?seconds=1")
		require.Equal(t, http.StatusOK, status, "%s", body)
		require.Greater(t, len(body), 2)
		require.Equal(t, []byte{0x1f, 0x8b}, body[:2], "a CPU profile is gzipped protobuf")

		for _, name := range []string{"heap", "goroutine", "allocs", "block", "mutex", "cmdline", "symbol"} {
			status, _ := get(t, base+name)
			require.Equal(t, http.StatusOK, status, name)
		}

		require.NoError(t, tb.stop(t))
		requireNothingListens(t, addr)
	})

	t.Run("OffByDefault", func(t *testing.T) {
		t.Parallel()
		logs := &testlog.Buffer{}
		// Without the dashboard (whose app answers every unknown GET path), an unknown
		// path is the router's 404.
		tb := serve(t, daemontest.Options{Logs: logs, Env: []string{"LOG_LEVEL=info", "WEBAPP_ROOT="}})
		require.NotContains(t, logs.String(), "profiling endpoints listening")
		// The API never serves http.DefaultServeMux, where net/http/pprof registers itself.
		status, body := tb.raw(t, http.MethodGet, "/debug/pprof/", "")
		require.Equal(t, http.StatusNotFound, status)
		require.NotContains(t, string(body), "Types of profiles available")
	})

	t.Run("ListenFailureIsAStartupError", func(t *testing.T) {
		t.Parallel()
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer taken.Close()
		// No database is needed: the listener fails before the store is opened.
		err = daemontest.StartError(t, daemontest.Options{NoDatabase: true,
			Env: []string{"QUEEN_PPROF_ADDR=" + taken.Addr().String()}})
		require.ErrorIs(t, err, syscall.EADDRINUSE)
		require.ErrorContains(t, err, "QUEEN_PPROF_ADDR")
	})
}
