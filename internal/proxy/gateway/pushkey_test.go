package gateway_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/proxy/gateway"
	"github.com/queenmq/queen/internal/proxy/proxytest"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// reply is one answer of the proxy or the broker.
type reply struct {
	status int
	body   []byte
}

func (r reply) code(t *testing.T) string {
	t.Helper()
	var e struct {
		Code string `json:"code"`
	}
	require.NoError(t, json.Unmarshal(r.body, &e), "body %q", r.body)
	return e.Code
}

// call sends a request with key as bearer ("" = none) and body as JSON (nil = none).
func call(t *testing.T, method, url, key string, body any) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
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
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, body: raw}
}

// createKey makes a key of scope for the tenant and returns its text.
func createKey(t *testing.T, p *proxytest.Proxy, tenantID, scope string) string {
	t.Helper()
	var k api.ProxyNewKey
	require.Equal(t, http.StatusCreated, p.Admin(t, http.MethodPost, "/admin/v1/tenants/"+tenantID+"/keys",
		map[string]string{"name": scope + "-key", "scope": scope}, &k))
	require.Equal(t, scope, k.Scope)
	return k.Key
}

// brokerAPIRequests is how many requests under /api/ the broker has answered, by its
// own queen_http_requests_total (the proxy's health and tenancy probes left out).
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

var pathParam = regexp.MustCompile(`\{([A-Za-z]+)\}`)

// concrete turns a route pattern into a path: {queue} is "orders", other parameters
// "p-<name>", a trailing "*" the segment "k".
func concrete(pattern string) string {
	path := pathParam.ReplaceAllStringFunc(pattern, func(m string) string {
		if m == "{queue}" {
			return "orders"
		}
		return "p-" + strings.Trim(m, "{}")
	})
	if s, ok := strings.CutSuffix(path, "*"); ok {
		path = s + "k"
	}
	return path
}

func pushItems(txs ...string) map[string]any {
	items := make([]map[string]any, len(txs))
	for i, tx := range txs {
		items[i] = map[string]any{"queue": "orders", "transactionId": tx, "payload": map[string]int{"i": i}}
	}
	return map[string]any{"items": items}
}

func scheduleTimer(key string) map[string]any {
	return map[string]any{"operations": []map[string]any{{"op": "schedule", "queue": "orders", "timerKey": key,
		"delayMs": 3_600_000, "txn": "timer-" + key, "payload": base64.StdEncoding.EncodeToString([]byte(`{"later":true}`))}}}
}

const brokerSecret = "broker-hs256-secret-0123456789abcdef"

// startProxy runs a proxy minting HS256 broker tokens in front of broker, with a
// tenant "acme"; env is added to its environment.
func startProxy(t *testing.T, broker *daemontest.Server, env ...string) *proxytest.Proxy {
	t.Helper()
	p := proxytest.Start(t, proxytest.Options{Backends: []string{broker.URL}, Login: true,
		Env: append(env, "QUEEN_PROXY_BROKER_AUTH=jwt", "QUEEN_PROXY_BROKER_JWT_KEY="+brokerSecret)})
	p.WaitBackends(t, "up", 10*time.Second)
	var out map[string]any
	require.Equal(t, http.StatusCreated, p.Admin(t, http.MethodPost, "/admin/v1/tenants", map[string]string{"id": "acme"}, &out), "%v", out)
	return p
}

// A push key pushes and schedules timers, with the broker's write-only role, and is
// refused (403, by the proxy: the broker sees none of it) on every other route of the
// route table; a write key still pushes and pops, and pops what the push key pushed.
func TestPushKeys(t *testing.T) {
	t.Parallel()
	broker := proxytest.StartBroker(t, daemontest.Options{Env: []string{"JWT_ENABLED=true", "JWT_ALGORITHM=HS256",
		"JWT_SECRET=" + brokerSecret, "JWT_ISSUER=queen-proxy", "JWT_AUDIENCE=queen"}})
	p := startProxy(t, broker)
	push, write := createKey(t, p, "acme", "push"), createKey(t, p, "acme", "write")

	r := call(t, http.MethodPost, p.URL+"/api/v1/push", push, pushItems("by-producer"))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	r = call(t, http.MethodPost, p.URL+"/api/v1/timers", push, scheduleTimer("t1"))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var timers struct {
		Results []struct {
			OK     bool   `json:"ok"`
			Status string `json:"status"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal(r.body, &timers))
	require.Len(t, timers.Results, 1)
	require.True(t, timers.Results[0].OK, "%s", r.body)

	// Who the key is: the broker role of its scope.
	r = call(t, http.MethodGet, p.URL+"/api/me", push, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var me struct {
		Role, Kind, Scope string
	}
	require.NoError(t, json.Unmarshal(r.body, &me))
	require.Equal(t, "apikey", me.Kind)
	require.Equal(t, "push", me.Scope)
	require.Equal(t, "write-only", me.Role)

	// Every other route of the table is refused before it reaches a broker.
	before := brokerAPIRequests(t, broker)
	walked := 0
	for _, rt := range gateway.RouteTable() {
		if (!rt.Tenant && !rt.Global) || rt.Scope == tenant.ScopePush {
			continue
		}
		method := rt.Method
		if method == "" {
			method = http.MethodGet
		}
		r := call(t, method, p.URL+concrete(rt.Pattern), push, nil)
		require.Equal(t, http.StatusForbidden, r.status, "%s %s: %s", method, rt.Pattern, r.body)
		require.Equal(t, "forbidden", r.code(t), "%s %s", method, rt.Pattern)
		walked++
	}
	require.Greater(t, walked, 50, "the walk covers the table")
	require.Equal(t, before, brokerAPIRequests(t, broker), "refused requests reached the broker")

	// A write key pushes and pops, the producer's message included.
	r = call(t, http.MethodPost, p.URL+"/api/v1/push", write, pushItems("by-writer"))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	r = call(t, http.MethodGet, p.URL+"/api/v1/pop/queue/orders?batch=10&wait=false", write, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var pop api.PopResponse
	require.NoError(t, json.Unmarshal(r.body, &pop))
	var txs []string
	for _, m := range pop.Messages {
		txs = append(txs, m.TransactionID)
	}
	require.ElementsMatch(t, []string{"by-producer", "by-writer"}, txs)
}

// The push key's broker token carries QUEEN_PROXY_BROKER_ROLE_WRITE_ONLY and nothing
// else: set to a role the broker does not know, the broker refuses the key's pushes
// (403, forwarded) while a write key of the same proxy still pushes.
func TestPushKeyRoleIsTheWriteOnlySetting(t *testing.T) {
	t.Parallel()
	broker := proxytest.StartBroker(t, daemontest.Options{Env: []string{"JWT_ENABLED=true", "JWT_ALGORITHM=HS256",
		"JWT_SECRET=" + brokerSecret, "JWT_ISSUER=queen-proxy", "JWT_AUDIENCE=queen", "JWT_ROLE_WRITE_ONLY=producer"}})

	unknown := startProxy(t, broker, "QUEEN_PROXY_BROKER_ROLE_WRITE_ONLY=not-a-broker-role")
	push, write := createKey(t, unknown, "acme", "push"), createKey(t, unknown, "acme", "write")
	before := brokerAPIRequests(t, broker)
	r := call(t, http.MethodPost, unknown.URL+"/api/v1/push", push, pushItems("refused"))
	require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
	require.Greater(t, brokerAPIRequests(t, broker), before, "the broker, not the proxy, refused the push")
	r = call(t, http.MethodPost, unknown.URL+"/api/v1/push", write, pushItems("by-writer"))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)

	matching := startProxy(t, broker, "QUEEN_PROXY_BROKER_ROLE_WRITE_ONLY=producer")
	push = createKey(t, matching, "acme", "push")
	r = call(t, http.MethodPost, matching.URL+"/api/v1/push", push, pushItems("by-producer"))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
}
