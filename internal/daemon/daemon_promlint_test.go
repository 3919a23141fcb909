package daemon_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
)

// TestPrometheusMetricsPassPromlint scrapes /metrics/prometheus of a real broker
// after pushes, pops, acks, an empty pop and a refused request (so that the labelled
// families have series), and runs Prometheus' own linter, promlint (what `promtool
// check metrics` runs), over it: every family must pass.
func TestPrometheusMetricsPassPromlint(t *testing.T) {
	t.Parallel()
	srv := daemontest.Start(t, daemontest.Options{Env: []string{"QUEEN_STATS_LOG_INTERVAL=20ms"}})
	call := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, b
	}

	for i := range 5 {
		code, b := call(http.MethodPost, "/api/v1/push",
			fmt.Sprintf(`{"items":[{"queue":"lint","partition":"p%d","payload":{"n":%d}}]}`, i%2, i))
		require.Equal(t, http.StatusCreated, code, "%s", b)
	}
	code, b := call(http.MethodGet, "/api/v1/pop/queue/lint?batch=3", "")
	require.Equal(t, http.StatusOK, code, "%s", b)
	var popped struct {
		Messages []struct {
			TransactionID string `json:"transactionId"`
			PartitionID   string `json:"partitionId"`
			LeaseID       string `json:"leaseId"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(b, &popped), "%s", b)
	require.NotEmpty(t, popped.Messages)
	for _, m := range popped.Messages {
		ack := fmt.Sprintf(`{"transactionId":%q,"partitionId":%q,"leaseId":%q,"status":"completed"}`,
			m.TransactionID, m.PartitionID, m.LeaseID)
		code, b := call(http.MethodPost, "/api/v1/ack", ack)
		require.Less(t, code, 300, "ack: %s", b)
	}
	code, _ = call(http.MethodGet, "/api/v1/pop/queue/lint-empty", "")
	require.Equal(t, http.StatusNoContent, code)
	code, _ = call(http.MethodPost, "/api/v1/push", `{"items":[{"queue":""}]}`)
	require.Equal(t, http.StatusBadRequest, code)

	code, body := call(http.MethodGet, "/metrics/prometheus", "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), "queen_requests_total{", "the request counter has series")

	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	require.NoError(t, err)
	var lines []string
	for _, p := range problems {
		lines = append(lines, p.Metric+": "+p.Text)
	}
	require.Empty(t, lines, "promlint problems in /metrics/prometheus")
}
