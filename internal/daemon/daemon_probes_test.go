package daemon_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
)

// TestReadinessDuringAnOutage: while PostgreSQL is unreachable the broker stays ready
// because its spool takes pushes (upstream's /health says unhealthy), /health/live never
// looks at the database, and readiness says "ready" plainly again once it is back.
func TestReadinessDuringAnOutage(t *testing.T) {
	t.Parallel()
	tb := startBroker(t)
	restore := pgtest.CutOff(t, tb.dbURL)

	status, body := tb.raw(t, http.MethodGet, "/health/ready", "")
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.JSONEq(t, `{"status":"ready","database":"unreachable","spool":"accepting"}`, string(body))
	status, _ = tb.raw(t, http.MethodGet, "/health", "")
	require.Equal(t, http.StatusServiceUnavailable, status)
	status, _ = tb.raw(t, http.MethodGet, "/health/live", "")
	require.Equal(t, http.StatusOK, status)
	status, body = tb.raw(t, http.MethodPost, "/api/v1/push", `{"items":[{"queue":"probe","payload":1}]}`)
	require.Equal(t, http.StatusCreated, status, "%s", body)
	require.Contains(t, string(body), `"buffered"`)

	restore()
	require.Eventually(t, func() bool {
		status, body := tb.raw(t, http.MethodGet, "/health/ready", "")
		return status == http.StatusOK && string(body) == `{"status":"ready"}`
	}, startTimeout, 20*time.Millisecond)
}

// TestShutdownDelayKeepsServingWhileNotReady: with QUEEN_SHUTDOWN_DELAY a stop first
// turns /health/ready to 503 and keeps serving every other route, and only then closes
// the listener and drains; Run returns nil.
func TestShutdownDelayKeepsServingWhileNotReady(t *testing.T) {
	t.Parallel()
	// Long enough that a loaded machine sends the requests below inside it.
	tb := startBroker(t, "QUEEN_SHUTDOWN_DELAY=5s")
	tb.cancel()

	require.Eventually(t, func() bool {
		status, _ := tb.raw(t, http.MethodGet, "/health/ready", "")
		return status == http.StatusServiceUnavailable
	}, stopTimeout, 10*time.Millisecond, "readiness turns 503 first")
	status, body := tb.raw(t, http.MethodPost, "/api/v1/push", `{"items":[{"queue":"late","payload":1}]}`)
	require.Equal(t, http.StatusCreated, status, "still serving while not ready: %s", body)
	var res []map[string]any
	require.NoError(t, json.Unmarshal(body, &res))
	require.Equal(t, "queued", res[0]["status"])
	status, _ = tb.raw(t, http.MethodGet, "/health/live", "")
	require.Equal(t, http.StatusOK, status)

	require.Eventually(t, func() bool {
		resp, err := tb.http.Get(tb.baseURL + "/health/live")
		if err == nil {
			resp.Body.Close()
			return false
		}
		return errors.Is(err, syscall.ECONNREFUSED)
	}, stopTimeout, 20*time.Millisecond, "the listener closes after the delay")
	require.NoError(t, tb.stop(t))
}
