package daemon_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/proxytest"
	"github.com/queenmq/queen/internal/testwait"
)

// TestPrometheusMetricsPassPromlint scrapes the proxy's /metrics/prometheus (admin
// listener) after a push and a pop with a tenant key, a refused credential (401) and
// a rate-limited request (429), once a metering flush and a usage snapshot have
// given their families series too, and runs Prometheus' own linter, promlint (what
// `promtool check metrics` runs), over it: every family must pass, and be in the
// operator page's table.
func TestPrometheusMetricsPassPromlint(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{env: []string{"QUEEN_PROXY_USAGE_FLUSH_INTERVAL=100ms", "QUEEN_PROXY_USAGE_REFRESH=100ms"}})
	p := b.proxy
	createTenant(t, p, tenantSpec{ID: "acme"})
	createTenant(t, p, tenantSpec{ID: "slow", Limits: map[string]any{"requestsPerSecond": 1, "requestsBurst": 1}})
	acme := createKey(t, p, "acme", "write")
	slow := createKey(t, p, "slow", "read")

	r := call(t, http.MethodPost, p.URL+"/api/v1/push", acme.Key, pushBody("lint", 2, nil))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	r = call(t, http.MethodGet, p.URL+"/api/v1/pop/queue/lint?batch=2&wait=false", acme.Key, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", "qp_not-a-key", nil)
	require.Equal(t, http.StatusUnauthorized, r.status, "%s", r.body)
	// A burst of one: the second request within the same second is refused; a slow
	// machine may need a few more.
	eventually(t, 10*time.Second, func() bool {
		return call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", slow.Key, nil).status == http.StatusTooManyRequests
	}, "no 429 for a tenant limited to 1 request per second")

	want := []string{
		`queen_proxy_http_requests_total{`,
		`queen_proxy_tenant_requests_total{result="forwarded",tenant="acme"}`,
		`queen_proxy_tenant_requests_total{result="rate_limited",tenant="slow"}`,
		`queen_proxy_auth_failures_total{`,
		`queen_proxy_tenant_messages_total{direction="out",tenant="acme"}`,
		`queen_proxy_tenant_stored_messages{tenant="acme"}`,
		`queen_proxy_upstream_up{`,
		`queen_proxy_cell_brokers_up{cell="default"} 1`,
		`queen_proxy_held_requests 0`,
		`queen_proxy_usage_flushes_total{`,
		`queen_proxy_build_info{`,
		`queen_proxy_db_pool_max_connections 6`,
		`queen_proxy_db_pool_connections{state="idle"}`,
		`queen_proxy_db_unanswered_statements_total 0`,
	}
	var body string
	testwait.For(t, 20*time.Second, 50*time.Millisecond, func() error {
		body = scrapeProxyMetrics(t, p)
		var missing []string
		for _, series := range want {
			if !strings.Contains(body, series) {
				missing = append(missing, series)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("families without these series: %q in:\n%s", missing, body)
		}
		return nil
	})

	problems, err := promlint.New(strings.NewReader(body)).Lint()
	require.NoError(t, err)
	var lines []string
	for _, pr := range problems {
		lines = append(lines, pr.Metric+": "+pr.Text)
	}
	require.Empty(t, lines, "promlint problems in the proxy's /metrics/prometheus")

	// Every family of the proxy's own is in the metrics table of the operator page.
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "multi-tenant.md"))
	require.NoError(t, err)
	var undocumented []string
	for _, line := range strings.Split(body, "\n") {
		name, ok := strings.CutPrefix(line, "# TYPE ")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, " ")
		if strings.HasPrefix(name, "queen_proxy_") && !strings.Contains(string(doc), "`"+name+"`") {
			undocumented = append(undocumented, name)
		}
	}
	require.Empty(t, undocumented, "families missing from docs/multi-tenant.md")
}

// scrapeProxyMetrics returns the admin listener's /metrics/prometheus.
func scrapeProxyMetrics(t *testing.T, p *proxytest.Proxy) string {
	t.Helper()
	r := call(t, http.MethodGet, p.AdminURL+"/metrics/prometheus", proxytest.AdminToken, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	return string(r.body)
}
