package daemon_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// tenantPair is two tenants behind one proxy: acme with an admin-scope key (it may
// delete), bob with a write key.
type tenantPair struct {
	*testBundle
	acme, bob createdKey
}

func setupPair(t *testing.T) *tenantPair {
	t.Helper()
	b := setup(t, setupOpts{})
	createTenant(t, b.proxy, tenantSpec{ID: "acme"})
	createTenant(t, b.proxy, tenantSpec{ID: "bob"})
	return &tenantPair{testBundle: b, acme: createKey(t, b.proxy, "acme", "admin"), bob: createKey(t, b.proxy, "bob", "write")}
}

// do sends one request through the proxy with key.
func (p *tenantPair) do(t *testing.T, key createdKey, method, path string, body any) reply {
	t.Helper()
	return call(t, method, p.proxy.URL+path, key.Key, body)
}

// push pushes items {"t":tenant,"i":i} to queue as the key's tenant and returns the
// partition id of the first.
func (p *tenantPair) push(t *testing.T, key createdKey, tenantID, queue string, n int, txPrefix string) string {
	t.Helper()
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"queue": queue, "transactionId": fmt.Sprintf("%s-%d", txPrefix, i),
			"payload": map[string]any{"t": tenantID, "i": i}}
	}
	r := p.do(t, key, http.MethodPost, "/api/v1/push", map[string]any{"items": items})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	var res []api.PushResult
	r.json(t, &res)
	require.Len(t, res, n)
	return res[0].PartitionID
}

// pop pops up to batch messages of queue (query adds parameters) as the key's tenant.
func (p *tenantPair) pop(t *testing.T, key createdKey, queue string, batch int, query string) []api.Message {
	t.Helper()
	r := p.do(t, key, http.MethodGet, fmt.Sprintf("/api/v1/pop/queue/%s?batch=%d&wait=false%s", queue, batch, query), nil)
	if r.status == http.StatusNoContent {
		return nil
	}
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var pop api.PopResponse
	r.json(t, &pop)
	for i := range pop.Messages {
		if pop.Messages[i].LeaseID == "" {
			pop.Messages[i].LeaseID = pop.LeaseID
		}
	}
	return pop.Messages
}

// queueNames lists the queues the key's tenant sees.
func (p *tenantPair) queueNames(t *testing.T, key createdKey) []string {
	t.Helper()
	r := p.do(t, key, http.MethodGet, "/api/v1/resources/queues", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var list api.QueueList
	r.json(t, &list)
	var names []string
	for _, q := range list.Queues {
		names = append(names, q.Name)
	}
	return names
}

// Each tenant pushes to, pops from and lists its own "orders" through the proxy;
// the broker's global view has both stored names.
func TestIsolation(t *testing.T) {
	t.Parallel()
	p := setupPair(t)
	for _, tc := range []struct {
		id  string
		key createdKey
	}{{"acme", p.acme}, {"bob", p.bob}} {
		p.push(t, tc.key, tc.id, "orders", 10, tc.id)
	}
	for _, tc := range []struct {
		id  string
		key createdKey
	}{{"acme", p.acme}, {"bob", p.bob}} {
		require.Equal(t, []string{"orders"}, p.queueNames(t, tc.key))
		msgs := p.pop(t, tc.key, "orders", 50, "")
		require.Len(t, msgs, 10, "%s pops another tenant's messages, or not all its own", tc.id)
		for _, m := range msgs {
			require.Equal(t, "orders", m.Queue)
			require.Contains(t, string(m.Data), `"t":"`+tc.id+`"`)
		}
	}
	require.Equal(t, map[string]int{"acme:orders": 10, "bob:orders": 10}, brokerQueues(t, p.broker))
}

// acme's key cannot reach bob's data through the proxy, by name or by id; bob's data
// stays as it was.
func TestBreakouts(t *testing.T) {
	t.Parallel()
	p := setupPair(t)
	bobPID := p.push(t, p.bob, "bob", "orders", 2, "bob")
	acmePID := p.push(t, p.acme, "acme", "orders", 1, "acme")
	leased := p.pop(t, p.bob, "orders", 1, "")
	require.Len(t, leased, 1)
	m := leased[0]

	t.Run("ByName", func(t *testing.T) {
		before := brokerQueues(t, p.broker)
		r := p.do(t, p.acme, http.MethodPost, "/api/v1/push", pushBody("bob:orders", 1, nil))
		require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
		r = p.do(t, p.acme, http.MethodGet, "/api/v1/pop/queue/..%2Fbob", nil)
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Equal(t, "non_canonical_path", r.code(t))
		r = p.do(t, p.acme, http.MethodGet, "/api/v1/pop/queue/bob:orders?wait=false", nil)
		require.Equal(t, http.StatusBadRequest, r.status)
		r = p.do(t, p.acme, http.MethodDelete, "/api/v1/resources/queues/bob:orders", nil)
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Equal(t, before, brokerQueues(t, p.broker), "bob's queue changed")
	})

	t.Run("AckAndLeaseByID", func(t *testing.T) {
		ack := map[string]string{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": m.LeaseID}
		var res []map[string]any
		r := p.do(t, p.acme, http.MethodPost, "/api/v1/ack", ack)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &res)
		require.Equal(t, false, res[0]["success"])
		require.Equal(t, queue.AckUnresolvable, res[0]["error"], "another tenant's partition resolves nowhere")
		r = p.do(t, p.acme, http.MethodPost, "/api/v1/ack/batch", map[string]any{"acknowledgments": []any{ack}})
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &res)
		require.Equal(t, false, res[0]["success"])
		r = p.do(t, p.acme, http.MethodPost, "/api/v1/lease/"+m.LeaseID+"/extend", map[string]int{"seconds": 60})
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &res)
		require.Equal(t, false, res[0]["success"])
		require.Equal(t, "Lease not found", res[0]["error"])

		// Still bob's, leased to him: his lease extends and his ack succeeds.
		r = p.do(t, p.bob, http.MethodPost, "/api/v1/lease/"+m.LeaseID+"/extend", map[string]int{"seconds": 60})
		r.json(t, &res)
		require.Equal(t, true, res[0]["success"], "%s", r.body)
		r = p.do(t, p.bob, http.MethodPost, "/api/v1/ack", ack)
		r.json(t, &res)
		require.Equal(t, true, res[0]["success"], "%s", r.body)
	})

	t.Run("MessageByID", func(t *testing.T) {
		path := "/api/v1/messages/" + bobPID + "/bob-1"
		require.Equal(t, http.StatusNotFound, p.do(t, p.acme, http.MethodGet, path, nil).status)
		r := p.do(t, p.acme, http.MethodDelete, path, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var del struct {
			Success bool `json:"success"`
		}
		r.json(t, &del)
		require.False(t, del.Success)
		r = p.do(t, p.bob, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, r.status, "bob's message is gone: %s", r.body)
		require.Equal(t, 2, brokerQueues(t, p.broker)["bob:orders"])
	})

	t.Run("ConsumerGroupOfTheSameName", func(t *testing.T) {
		p.pop(t, p.bob, "orders", 1, "&consumerGroup=g1")
		p.pop(t, p.acme, "orders", 1, "&consumerGroup=g1")
		r := p.do(t, p.acme, http.MethodDelete, "/api/v1/consumer-groups/g1", nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r = p.do(t, p.acme, http.MethodGet, "/api/v1/consumer-groups/g1", nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.JSONEq(t, `{}`, string(r.body), "acme's g1 is gone")
		r = p.do(t, p.bob, http.MethodGet, "/api/v1/consumer-groups/g1", nil)
		require.Equal(t, http.StatusOK, r.status, "bob's g1 is gone: %s", r.body)
		var g map[string]any
		r.json(t, &g)
		require.Contains(t, g, "orders", "bob's g1 lost its queue")
	})

	t.Run("NamespacePop", func(t *testing.T) {
		for _, k := range []createdKey{p.acme, p.bob} {
			r := p.do(t, k, http.MethodPost, "/api/v1/configure", map[string]any{"queue": "jobs", "namespace": "billing"})
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		}
		p.push(t, p.bob, "bob", "jobs", 1, "bob-job")
		require.Equal(t, http.StatusNoContent, p.do(t, p.acme, http.MethodGet, "/api/v1/pop?namespace=billing&wait=false", nil).status,
			"acme's namespace pop sees bob's message")
		p.push(t, p.acme, "acme", "jobs", 1, "acme-job")
		r := p.do(t, p.acme, http.MethodGet, "/api/v1/pop?namespace=billing&wait=false&batch=10", nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var pop api.PopResponse
		r.json(t, &pop)
		require.Len(t, pop.Messages, 1)
		require.Equal(t, "acme-job-0", pop.Messages[0].TransactionID)
		require.Equal(t, "jobs", pop.Messages[0].Queue)
	})

	t.Run("TraceNames", func(t *testing.T) {
		trace := func(k createdKey, pid, tx, name string) int {
			return p.do(t, k, http.MethodPost, "/api/v1/traces", map[string]any{"partitionId": pid, "transactionId": tx,
				"data": map[string]any{}, "traceNames": name}).status
		}
		require.Equal(t, http.StatusCreated, trace(p.bob, bobPID, "bob-0", "t-bob"))
		require.Equal(t, http.StatusCreated, trace(p.acme, acmePID, "acme-0", "t-acme"))
		require.Equal(t, http.StatusNotFound, trace(p.acme, bobPID, "bob-0", "t-acme"), "acme traced bob's message")
		r := p.do(t, p.acme, http.MethodGet, "/api/v1/traces/names", nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var names struct {
			TraceNames []struct {
				TraceName string `json:"trace_name"`
			} `json:"trace_names"`
		}
		r.json(t, &names)
		require.Len(t, names.TraceNames, 1)
		require.Equal(t, "t-acme", names.TraceNames[0].TraceName)
	})
}

// A client's own tenancy header, in any case and any count, is refused with 400 and
// nothing of the request reaches the broker.
func TestSpoofedTenancyHeader(t *testing.T) {
	t.Parallel()
	p := setupPair(t)
	p.push(t, p.bob, "bob", "orders", 3, "bob")
	queues := brokerQueues(t, p.broker)
	before := brokerAPIRequests(t, p.broker)
	for _, tc := range []struct {
		name   string
		header string
		values []string
		key    string
	}{
		{"Canonical", "X-Queen-Tenant", []string{"bob"}, p.acme.Key},
		{"LowerCase", "x-queen-tenant", []string{"bob"}, p.acme.Key},
		{"UpperCase", "X-QUEEN-TENANT", []string{"bob"}, p.acme.Key},
		{"Repeated", "X-Queen-Tenant", []string{"bob", "bob"}, p.acme.Key},
		{"Conflicting", "x-queen-tenant", []string{"acme", "bob"}, p.acme.Key},
		{"Empty", "X-Queen-Tenant", []string{""}, p.acme.Key},
		{"NoCredential", "X-Queen-Tenant", []string{"bob"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, req := range []struct{ method, path, body string }{
				{http.MethodPost, "/api/v1/push", `{"items":[{"queue":"orders","payload":{"spoofed":true}}]}`},
				{http.MethodGet, "/api/v1/pop/queue/orders?wait=false&batch=10", ""},
				{http.MethodGet, "/api/v1/resources/queues", ""},
				{http.MethodDelete, "/api/v1/resources/queues/orders", ""},
			} {
				status, body := sendRawHeader(t, req.method, p.proxy.URL+req.path, req.body, tc.key, tc.header, tc.values)
				require.Equal(t, http.StatusBadRequest, status, "%s %s: %s", req.method, req.path, body)
				require.Contains(t, body, `"code":"forbidden_header"`)
			}
		})
	}
	require.Equal(t, before, brokerAPIRequests(t, p.broker), "a request with a client tenancy header reached the broker")
	require.Equal(t, queues, brokerQueues(t, p.broker))
	msgs := p.pop(t, p.bob, "orders", 10, "")
	require.Len(t, msgs, 3, "bob's messages were consumed or joined by the spoofed requests")
}

// sendRawHeader sends a request whose header name is written exactly as given (Go
// canonicalizes names set through Header.Set and Header.Add), once per value.
func sendRawHeader(t *testing.T, method, url, body, key, name string, values []string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header[name] = values
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(raw)
}
