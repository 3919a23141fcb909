package daemon_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/proxy/proxytest"
	"github.com/queenmq/queen/internal/testlog"
)

// TestMain runs the tests through proxytest.Main, which removes the queen-proxy binary
// that proxytest.Exec builds for the replicas run as processes of their own.
func TestMain(m *testing.M) { os.Exit(proxytest.Main(m)) }

// testBundle is one real broker with tenancy on, a proxy in front of it, and the
// proxy's captured log.
type testBundle struct {
	broker *daemontest.Server
	proxy  *proxytest.Proxy
	logs   *testlog.Buffer
}

type setupOpts struct {
	env []string
	// brokerEnv is added to the broker's environment.
	brokerEnv []string
	login     bool
}

func setup(t *testing.T, o setupOpts) *testBundle {
	t.Helper()
	b := &testBundle{logs: &testlog.Buffer{}}
	b.broker = proxytest.StartBroker(t, daemontest.Options{Env: o.brokerEnv})
	b.proxy = proxytest.Start(t, proxytest.Options{Backends: []string{b.broker.URL}, Env: o.env, Logs: b.logs, Login: o.login})
	b.proxy.WaitBackends(t, "up", 10*time.Second)
	return b
}

// brokerQueues is the broker's global view: every stored queue name (tenant queues
// as "<tenant>:<name>") with its total of stored messages.
func brokerQueues(t *testing.T, broker *daemontest.Server) map[string]int {
	t.Helper()
	r := call(t, http.MethodGet, broker.URL+"/api/v1/resources/queues", "", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var list api.QueueList
	r.json(t, &list)
	out := map[string]int{}
	for _, q := range list.Queues {
		out[q.Name] = q.Messages.Total
	}
	return out
}

// brokerAPIRequests is how many API requests (routes under /api/) the broker has
// answered, by its own queen_http_requests_total: what reached it, the proxy's health
// and tenancy probes (/health, /internal) left out.
func brokerAPIRequests(t *testing.T, broker *daemontest.Server) float64 {
	t.Helper()
	r := call(t, http.MethodGet, broker.URL+"/metrics/prometheus", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(r.body))
	require.NoError(t, err)
	total := 0.0
	for _, m := range mfs["queen_http_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "route" && strings.HasPrefix(l.GetValue(), "/api/") {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// tenantSpec is the body of POST /admin/v1/tenants.
type tenantSpec struct {
	ID     string         `json:"id"`
	Name   string         `json:"name,omitempty"`
	Limits map[string]any `json:"limits,omitempty"`
	Quotas map[string]any `json:"quotas,omitempty"`
}

func createTenant(t *testing.T, p *proxytest.Proxy, spec tenantSpec) {
	t.Helper()
	var out map[string]any
	require.Equal(t, http.StatusCreated, p.Admin(t, http.MethodPost, "/admin/v1/tenants", spec, &out), "%v", out)
}

// createdKey is the answer of a key creation or rotation.
type createdKey struct {
	ID     string   `json:"id"`
	Key    string   `json:"key"`
	Scope  string   `json:"scope"`
	Queues []string `json:"queues"`
}

func createKey(t *testing.T, p *proxytest.Proxy, tenantID, scope string, queues ...string) createdKey {
	t.Helper()
	var k createdKey
	body := map[string]any{"name": "k", "scope": scope}
	if len(queues) > 0 {
		body["queues"] = queues
	}
	require.Equal(t, http.StatusCreated, p.Admin(t, http.MethodPost, "/admin/v1/tenants/"+tenantID+"/keys", body, &k))
	require.NotEmpty(t, k.Key)
	return k
}

// reply is a public-listener answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.body, v), "body %q", r.body)
}

func (r reply) code(t *testing.T) string {
	t.Helper()
	var e struct {
		Code string `json:"code"`
	}
	r.json(t, &e)
	return e.Code
}

// call makes a request with key as bearer ("" = none) and body marshalled to JSON
// (a []byte is sent as is).
func call(t *testing.T, method, url, key string, body any, hdr ...string) reply {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: raw}
}

// popAnswer is what the tests read of a pop's answer.
type popAnswer struct {
	Messages []struct {
		TransactionID string `json:"transactionId"`
		PartitionID   string `json:"partitionId"`
	} `json:"messages"`
	LeaseID string `json:"leaseId"`
}

// pushBody is a push of n items to queue with payload {"i":k}.
func pushBody(queue string, n int, txid func(i int) string) map[string]any {
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"queue": queue, "payload": map[string]int{"i": i}}
		if txid != nil {
			items[i]["transactionId"] = txid(i)
		}
	}
	return map[string]any{"items": items}
}

// eventually polls cond every 20 ms until it holds or within passes.
func eventually(t *testing.T, within time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	require.Eventually(t, cond, within, 20*time.Millisecond, fmt.Sprintf(msg, args...))
}
