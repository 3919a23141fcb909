package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/encryption"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/store"
	"github.com/queenmq/queen/internal/testlog"
)

// testBundle is a real server over a real broker and a fresh database.
type testBundle struct {
	srv    *httptest.Server
	broker *broker.Broker
}

// setup starts a server with opts over a broker on a new test database.
func setup(t testing.TB, opts Options) *testBundle {
	t.Helper()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	return start(t, opts, st)
}

// start serves a server over a broker on st. The server is closed (waiting for every
// in-flight request, so no log line outlives the test) before st.
func start(t testing.TB, opts Options, st *store.Store) *testBundle {
	t.Helper()
	logger := testLogger(t)
	b := broker.New(broker.DefaultConfig(), st, logger)
	api := New(opts, b, logger)
	if opts.TenancyHeader != "" {
		// As the daemon does before serving: tenant requests wait for the fences.
		require.NoError(t, api.LoadFences(t.Context()))
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	return &testBundle{srv: srv, broker: b}
}

// testLogger logs through t.Log at Debug (testlog.Logger, by the name this package's
// tests use).
func testLogger(t testing.TB) *slog.Logger { return testlog.Logger(t) }

// brokerConfig is broker.DefaultConfig() changed by each of opts in turn.
func brokerConfig(opts ...func(*broker.Config)) broker.Config {
	cfg := broker.DefaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// withSealer gives the broker an encryption key.
func withSealer(s *encryption.Sealer) func(*broker.Config) {
	return func(c *broker.Config) { c.Sealer = s }
}

// response is a fully read HTTP answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request with an optional body ("" sends none) and extra headers as
// name/value pairs.
func (b *testBundle) do(t *testing.T, method, path, body string, headers ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, b.srv.URL+path, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

func (b *testBundle) get(t *testing.T, path string) response {
	t.Helper()
	return b.do(t, http.MethodGet, path, "")
}

func (b *testBundle) post(t *testing.T, path, body string) response {
	t.Helper()
	return b.do(t, http.MethodPost, path, body)
}

// object decodes a JSON object body.
func (r response) object(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "body: %s", r.body)
	return m
}

// array decodes a top-level array of objects.
func (r response) array(t *testing.T) []map[string]any {
	t.Helper()
	var a []map[string]any
	require.NoError(t, json.Unmarshal(r.body, &a), "body: %s", r.body)
	return a
}

// requireStatus fails with the body when the status differs.
func requireStatus(t *testing.T, want int, r response) {
	t.Helper()
	require.Equal(t, want, r.status, "body: %s", r.body)
}

// requireError checks an error answer: status, the "error" string, the code and the
// field ("" = no field key).
func requireError(t *testing.T, r response, status int, code, msg, field string) {
	t.Helper()
	requireStatus(t, status, r)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	m := r.object(t)
	require.Equal(t, msg, m["error"], "body: %s", r.body)
	require.Equal(t, code, m["code"], "body: %s", r.body)
	if field == "" {
		require.NotContains(t, m, "field")
	} else {
		require.Equal(t, field, m["field"], "body: %s", r.body)
	}
}

// keys returns the sorted keys of m.
func keys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}

// sortedKeys sorts a literal key list for comparison with keys.
func sortedKeys(k ...string) []string {
	return slices.Sorted(slices.Values(k))
}

// mustJSON encodes v.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, json.NewEncoder(&buf).Encode(v))
	return buf.String()
}

// pushOne pushes one item and returns its result.
func (b *testBundle) pushOne(t *testing.T, queueName, partition, txID, payload string) map[string]any {
	t.Helper()
	item := map[string]any{"queue": queueName, "payload": json.RawMessage(payload)}
	if partition != "" {
		item["partition"] = partition
	}
	if txID != "" {
		item["transactionId"] = txID
	}
	r := b.post(t, "/api/v1/push", mustJSON(t, map[string]any{"items": []any{item}}))
	requireStatus(t, http.StatusCreated, r)
	res := r.array(t)
	require.Len(t, res, 1)
	return res[0]
}

// popOne pops queueName (wildcard) with query and returns the 200 body.
func (b *testBundle) popOne(t *testing.T, queueName, query string) map[string]any {
	t.Helper()
	r := b.get(t, "/api/v1/pop/queue/"+queueName+"?"+query)
	requireStatus(t, http.StatusOK, r)
	return r.object(t)
}
