package daemon_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/testlog"
)

// TestDaemonMetrics runs a whole daemon and checks what it wires: the registry with
// the runtime, process and build families next to the broker's and the router's,
// the backlog refresh started once ready, the JSON snapshot, and the "rates and
// sizes" line at QUEEN_STATS_LOG_INTERVAL.
func TestDaemonMetrics(t *testing.T) {
	t.Parallel()
	var logs testlog.Buffer
	srv := daemontest.Start(t, daemontest.Options{Logs: &logs,
		Env: []string{"LOG_LEVEL=info", "DB_POOL_SIZE=6", "QUEEN_STATS_LOG_INTERVAL=20ms"}})
	base := srv.URL

	get := func(path string) (*http.Response, []byte) {
		t.Helper()
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, body)
		return resp, body
	}

	resp, body := get("/metrics/prometheus")
	require.Equal(t, "text/plain; version=0.0.4; charset=utf-8", resp.Header.Get("Content-Type"))
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	require.NoError(t, err)
	for _, name := range []string{"queen_build_info", "go_goroutines", "process_cpu_seconds_total",
		"queen_uptime_seconds", "queen_db_pool_max_connections", "queen_pop_longpolls_parked",
		"queen_requests_total", "queen_metrics_refresh_success"} {
		require.Contains(t, mfs, name)
	}
	bi := mfs["queen_build_info"].GetMetric()[0]
	labels := map[string]string{}
	for _, lp := range bi.GetLabel() {
		labels[lp.GetName()] = lp.GetValue()
	}
	require.Equal(t, map[string]string{"version": "dev", "revision": "unknown", "goversion": runtime.Version()}, labels)
	require.Equal(t, 6.0, mfs["queen_db_pool_max_connections"].GetMetric()[0].GetGauge().GetValue())

	require.Eventually(t, func() bool {
		_, body := get("/metrics/prometheus")
		return bytes.Contains(body, []byte("\nqueen_metrics_refresh_success 1\n"))
	}, 10*time.Second, 20*time.Millisecond, "the daemon starts the backlog refresh once ready")

	_, body = get("/metrics")
	var m struct {
		Database struct{ PoolSize int } `json:"database"`
	}
	require.NoError(t, json.Unmarshal(body, &m))
	require.Equal(t, 6, m.Database.PoolSize)

	var line map[string]any
	require.Eventually(t, func() bool {
		for l := range strings.Lines(logs.String()) {
			if strings.Contains(l, `"msg":"rates and sizes"`) {
				return json.Unmarshal([]byte(l), &line) == nil
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "QUEEN_STATS_LOG_INTERVAL=20ms")
	require.Equal(t, "INFO", line["level"])
	require.Equal(t, "telemetry", line["component"])
	require.Equal(t, 6.0, line["db_pool_max"])
	require.Contains(t, line, "push_per_sec")
	require.Contains(t, line, "parked_longpolls")
}
