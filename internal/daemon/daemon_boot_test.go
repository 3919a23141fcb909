package daemon_test

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/testlog"
)

// TestBootWaitsForPostgreSQL starts the daemon against a port where nothing listens:
// it serves /health/live, answers /health/ready with 503, logs each attempt, and stops
// cleanly when cancelled.
func TestBootWaitsForPostgreSQL(t *testing.T) {
	t.Parallel()
	deadPort := closedPort(t)

	var logs testlog.Buffer
	srv := daemontest.Start(t, daemontest.Options{NoDatabase: true, NoWait: true, Logs: &logs,
		Env: []string{"PG_HOST=127.0.0.1", "PG_PORT=" + strconv.Itoa(deadPort), "LOG_LEVEL=info"}})

	status := func(path string) int {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Eventually(t, func() bool { return status("/health/live") == http.StatusOK }, startTimeout, 20*time.Millisecond)
	require.Equal(t, http.StatusServiceUnavailable, status("/health/ready"))
	require.Equal(t, http.StatusServiceUnavailable, status("/health"))
	require.Eventually(t, func() bool {
		return bytes.Count(logs.Bytes(), []byte("waiting for PostgreSQL")) >= 2
	}, startTimeout, 50*time.Millisecond, "one log line per attempt")

	require.NoError(t, srv.Stop(), "the daemon stops while waiting for PostgreSQL")
}

// TestBootRecordWhateverTheLogLevel starts the daemon with LOG_LEVEL=error: the start
// line, the effective configuration and the configuration's warnings are logged all
// the same, and the Info lines after them are not.
func TestBootRecordWhateverTheLogLevel(t *testing.T) {
	t.Parallel()
	deadPort := closedPort(t)

	var logs testlog.Buffer
	srv := daemontest.Start(t, daemontest.Options{NoDatabase: true, NoWait: true, Logs: &logs,
		Env: []string{"PG_HOST=127.0.0.1", "PG_PORT=" + strconv.Itoa(deadPort), "LOG_LEVEL=error", "NUM_WORKERS=4",
			"QUEEN_PUSH_MAX_CONCURENT=4"}})
	// /health/live answers once the listener is up, which is logged (at Info) before.
	require.Eventually(t, func() bool {
		resp, err := srv.Client().Get(srv.URL + "/health/live")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, startTimeout, 20*time.Millisecond)
	for _, msg := range []string{`"msg":"queen starting"`, `"msg":"effective configuration"`, `"LOG_LEVEL":`,
		`"msg":"configuration warning"`, `NUM_WORKERS`, `"msg":"unknown QUEEN_* variable ignored`, `QUEEN_PUSH_MAX_CONCURENT`} {
		require.Contains(t, logs.String(), msg)
	}
	require.NotContains(t, logs.String(), `"msg":"listening"`, "after the boot record, LOG_LEVEL applies")
}

// closedPort returns a loopback port nothing listens on (one just closed).
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}
