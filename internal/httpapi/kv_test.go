package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// requireKVError checks a KV refusal: status, the envelope's error and reason, and a
// detail.
func requireKVError(t *testing.T, r response, status int, code, reason string) {
	t.Helper()
	requireStatus(t, status, r)
	m := r.object(t)
	require.Equal(t, code, m["error"], "body: %s", r.body)
	require.Equal(t, reason, m["reason"], "body: %s", r.body)
	require.NotEmpty(t, m["detail"], "body: %s", r.body)
}

// kvResults posts a batch and returns its results.
func (b *testBundle) kvResults(t *testing.T, body string) []any {
	t.Helper()
	r := b.post(t, "/api/v1/kv", body)
	requireStatus(t, http.StatusOK, r)
	res, ok := r.object(t)["results"].([]any)
	require.True(t, ok, "body: %s", r.body)
	return res
}

func TestKVBatch(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})

	t.Run("ResultsAreIndexAligned", func(t *testing.T) {
		t.Parallel()
		res := b.kvResults(t, `{"operations":[
			{"op":"putIfAbsent","ns":"idem","key":"ord_1","value":{"chargeId":"ch_1"},"ttlSeconds":86400},
			{"op":"get","ns":"idem","key":"ord_1"},
			{"op":"get","ns":"idem","key":"nope"}]}`)
		put := res[0].(map[string]any)
		require.Equal(t, sortedKeys("index", "op", "applied", "key", "value", "version"), keys(put))
		require.Equal(t, "putIfAbsent", put["op"])
		got := res[1].(map[string]any)
		require.Equal(t, sortedKeys("index", "op", "found", "key", "value", "version", "expiresAt", "updatedAt"), keys(got))
		require.Equal(t, put["version"], got["version"])
		require.Equal(t, map[string]any{"chargeId": "ch_1"}, got["value"])
		require.True(t, strings.HasSuffix(got["expiresAt"].(string), "Z"))
		miss := res[2].(map[string]any)
		require.Equal(t, map[string]any{"index": float64(2), "op": "get", "found": false, "key": "nope"}, miss)

		again := b.kvResults(t, `[{"op":"putIfAbsent","ns":"idem","key":"ord_1","value":2,"forever":true}]`)[0].(map[string]any)
		require.Equal(t, false, again["applied"])
		require.Equal(t, "exists", again["reason"])
		require.Equal(t, put["version"], again["version"])
		require.Equal(t, map[string]any{"chargeId": "ch_1"}, again["value"])
	})

	t.Run("EmptyBatch", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, "/api/v1/kv", `[]`)
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"results":[]}`, string(r.body))
	})

	t.Run("RequiredAnswersThePreconditionEnvelope", func(t *testing.T) {
		t.Parallel()
		b.kvResults(t, `[{"op":"put","ns":"req","key":"k","value":"first","forever":true}]`)
		r := b.post(t, "/api/v1/kv", `[{"op":"put","ns":"req","key":"other","value":1,"forever":true},
			{"op":"putIfAbsent","ns":"req","key":"k","value":"second","forever":true,"required":true}]`)
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, sortedKeys("ok", "reason", "failedIndex", "kvReason", "version", "value"), keys(m))
		require.Equal(t, []any{false, "kv_precondition", float64(1), "exists", "first"},
			[]any{m["ok"], m["reason"], m["failedIndex"], m["kvReason"], m["value"]})
		got := b.kvResults(t, `[{"op":"get","ns":"req","key":"other"}]`)[0].(map[string]any)
		require.Equal(t, false, got["found"], "the whole call was rolled back")
	})

	t.Run("Refusals", func(t *testing.T) {
		t.Parallel()
		big := strings.Repeat("x", 65537)
		long := strings.Repeat("k", 513)
		many := "[" + strings.TrimSuffix(strings.Repeat(`{"op":"get","ns":"a","key":"k"},`, 257), ",") + "]"
		for _, tc := range []struct {
			name, body string
			status     int
			code       string
			reason     string
		}{
			{"NotArrayOrOperations", `{"ops":[]}`, 400, "kv_bad_request", "kv_bad_body"},
			{"BadNamespace", `[{"op":"get","ns":"Bad","key":"k"}]`, 400, "kv_bad_request", "kv_bad_namespace"},
			{"MissingNamespace", `[{"op":"get","key":"k"}]`, 400, "kv_bad_request", "kv_bad_namespace"},
			{"EmptyKey", `[{"op":"get","ns":"a","key":""}]`, 400, "kv_bad_request", "kv_bad_key"},
			{"KeyTooLarge", `[{"op":"get","ns":"a","key":"` + long + `"}]`, 413, "payload_too_large", "kv_key_too_large"},
			{"ValueTooLarge", `[{"op":"put","ns":"a","key":"k","forever":true,"value":"` + big + `"}]`, 413, "payload_too_large", "kv_value_too_large"},
			{"UnknownOp", `[{"op":"frob","ns":"a","key":"k"}]`, 400, "kv_bad_request", "kv_unknown_op"},
			{"NoExpiry", `[{"op":"put","ns":"a","key":"k","value":1}]`, 400, "kv_bad_request", "kv_expiry_not_specified"},
			{"BothExpiries", `[{"op":"put","ns":"a","key":"k","value":1,"ttlSeconds":5,"forever":true}]`, 400, "kv_bad_request", "kv_expiry_not_specified"},
			{"BadTTL", `[{"op":"put","ns":"a","key":"k","value":1,"ttlSeconds":1.5}]`, 400, "kv_bad_request", "kv_bad_ttl"},
			{"NullExpect", `[{"op":"put","ns":"a","key":"k","value":1,"forever":true,"expect":null}]`, 400, "kv_bad_request", "kv_bad_expect"},
			{"PutIfAbsentExpect", `[{"op":"putIfAbsent","ns":"a","key":"k","value":1,"forever":true,"expect":3}]`, 400, "kv_bad_request", "kv_bad_expect"},
			{"IncrExpect", `[{"op":"incr","ns":"a","key":"k","delta":1,"forever":true,"expect":0}]`, 400, "kv_bad_request", "kv_bad_expect"},
			{"PrefixRequired", `[{"op":"getPrefix","ns":"a"}]`, 400, "kv_bad_request", "kv_prefix_required"},
			{"TooManyOps", many, 400, "kv_bad_request", "kv_too_many_ops"},
			{"TooManyKeys", `[{"op":"getPrefix","ns":"a","prefix":"p","limit":1000},{"op":"getPrefix","ns":"a","prefix":"q","limit":1000}]`, 400, "kv_bad_request", "kv_too_many_keys"},
			{"DuplicateWrite", `[{"op":"put","ns":"a","key":"k","value":1,"forever":true},{"op":"delete","ns":"a","key":"k"}]`, 400, "kv_bad_request", "kv_duplicate_key_in_call"},
			{"TenantField", `[{"op":"get","ns":"a","key":"k","tenantId":"x"}]`, 400, "kv_bad_request", "kv_bad_body"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				requireKVError(t, b.post(t, "/api/v1/kv", tc.body), tc.status, tc.code, tc.reason)
			})
		}
	})

	t.Run("ShapeErrorWritesNothing", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, "/api/v1/kv", `[{"op":"put","ns":"shape","key":"k","value":1,"forever":true},{"op":"frob","ns":"a","key":"k"}]`)
		requireStatus(t, http.StatusBadRequest, r)
		got := b.kvResults(t, `[{"op":"get","ns":"shape","key":"k"}]`)[0].(map[string]any)
		require.Equal(t, false, got["found"])
	})
}

func TestKVPathRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})

	r := b.do(t, http.MethodPut, "/api/v1/kv/orders/order/9f1/a%2Fb", `{"value":{"s":1},"forever":true}`)
	requireStatus(t, http.StatusOK, r)
	put := r.object(t)
	require.Equal(t, "order/9f1/a/b", put["key"], "a catch-all key, percent-decoded once")
	require.Equal(t, true, put["applied"])

	r = b.get(t, "/api/v1/kv/orders/order/9f1/a%2Fb")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, fmt.Sprintf(`"%.0f"`, put["version"]), r.header.Get("ETag"))
	require.Equal(t, map[string]any{"s": float64(1)}, r.object(t)["value"])

	r = b.get(t, "/api/v1/kv/orders/missing")
	requireStatus(t, http.StatusOK, r)
	require.Empty(t, r.header.Get("ETag"))
	require.JSONEq(t, `{"index":0,"op":"get","found":false,"key":"missing"}`, string(r.body))

	requireKVError(t, b.get(t, "/api/v1/kv/orders/k?x=1"), 400, "kv_bad_request", "kv_no_query_string")
	requireKVError(t, b.do(t, http.MethodPut, "/api/v1/kv/orders/k", `{"key":"k","value":1,"forever":true}`),
		400, "kv_bad_request", "kv_field_in_path")
	requireKVError(t, b.get(t, "/api/v1/resources/kv/namespaces?x=1"), 400, "kv_bad_request", "kv_no_query_string")

	r = b.do(t, http.MethodDelete, "/api/v1/kv/orders/order/9f1/a%2Fb", "")
	requireStatus(t, http.StatusOK, r)
	del := r.object(t)
	require.Equal(t, []any{true, put["version"]}, []any{del["applied"], del["version"]})
	r = b.do(t, http.MethodDelete, "/api/v1/kv/orders/order/9f1/a%2Fb", `{"expect":0,"required":true}`)
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, true, r.object(t)["applied"], "expect 0 on nothing live applies")
}

func TestKVConsole(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{TenancyHeader: testTenancyHeader})
	b.kvResults(t, `[{"op":"put","ns":"zeta","key":"a","value":1,"forever":true},
		{"op":"put","ns":"alpha","key":"b","value":"xy","ttlSeconds":60},
		{"op":"put","ns":"alpha","key":"a","value":null,"forever":true}]`)
	r := b.asAcme(t, http.MethodPost, "/api/v1/kv", `[{"op":"put","ns":"acme-only","key":"k","value":1,"forever":true}]`)
	requireStatus(t, http.StatusOK, r)

	r = b.get(t, "/api/v1/resources/kv/namespaces")
	requireStatus(t, http.StatusOK, r)
	require.JSONEq(t, `{"namespaces":[{"namespace":"alpha","keys":2},{"namespace":"zeta","keys":1}]}`, string(r.body),
		"the global scope does not see acme's namespace")
	r = b.asAcme(t, http.MethodGet, "/api/v1/resources/kv/namespaces", "")
	require.JSONEq(t, `{"namespaces":[{"namespace":"acme-only","keys":1}]}`, string(r.body))

	r = b.post(t, "/api/v1/resources/kv/list", `{"namespace":"alpha","limit":1}`)
	requireStatus(t, http.StatusOK, r)
	m := r.object(t)
	require.Equal(t, sortedKeys("rows", "truncated", "nextAfter", "bytes"), keys(m))
	require.Equal(t, []any{true, "a", float64(4)}, []any{m["truncated"], m["nextAfter"], m["bytes"]})
	row := m["rows"].([]any)[0].(map[string]any)
	require.Equal(t, sortedKeys("key", "value", "version", "expiresAt", "updatedAt", "expired"), keys(row))
	require.Nil(t, row["expiresAt"])
	r = b.post(t, "/api/v1/resources/kv/list", `{"namespace":"alpha","after":"a","keysOnly":true}`)
	m = r.object(t)
	require.Equal(t, []any{false, nil, float64(0)}, []any{m["truncated"], m["nextAfter"], m["bytes"]})
	require.NotContains(t, m["rows"].([]any)[0].(map[string]any), "value")
	// The prefix and the cursor are free text, not keys: a prefix no key can start
	// (longer than a key, or holding a NUL) is an empty page, and a cursor is cut at its
	// first NUL, which sorts below every byte a key holds.
	long := strings.Repeat("a", queue.KVMaxKeyBytes+1)
	for _, body := range []string{`{"namespace":"alpha","prefix":"` + long + `"}`, `{"namespace":"alpha","prefix":"a\u0000"}`} {
		r = b.post(t, "/api/v1/resources/kv/list", body)
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"rows":[],"truncated":false,"nextAfter":null,"bytes":0}`, string(r.body))
	}
	for _, after := range []string{long, `a\u0000z`} {
		r = b.post(t, "/api/v1/resources/kv/list", `{"namespace":"alpha","keysOnly":true,"after":"`+after+`"}`)
		requireStatus(t, http.StatusOK, r)
		rows := r.object(t)["rows"].([]any)
		require.Len(t, rows, 1, "after %.8q", after)
		require.Equal(t, "b", rows[0].(map[string]any)["key"])
	}

	// A limit is never refused: one that is not a number is the default.
	for _, limit := range []string{`"1"`, `true`, `{}`} {
		r = b.post(t, "/api/v1/resources/kv/list", `{"namespace":"alpha","keysOnly":true,"limit":`+limit+`}`)
		requireStatus(t, http.StatusOK, r)
		require.Len(t, r.object(t)["rows"], 2, "limit %s", limit)
		res := b.kvResults(t, `[{"op":"getPrefix","ns":"alpha","prefix":"a","keysOnly":true,"limit":`+limit+`}]`)
		require.Len(t, res[0].(map[string]any)["rows"], 1, "getPrefix limit %s: %v", limit, res[0])
	}

	requireKVError(t, b.post(t, "/api/v1/resources/kv/list", `{}`), 400, "kv_bad_request", "kv_bad_body")
	requireKVError(t, b.post(t, "/api/v1/resources/kv/list", `{"namespace":"NO"}`), 400, "kv_bad_request", "kv_bad_namespace")
}

// TestKVPutIfAbsentTwoBrokers races putIfAbsent on one key through two brokers on one
// database: exactly one applies.
func TestKVPutIfAbsentTwoBrokers(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDBURL(t)
	var bundles []*testBundle
	for range 2 {
		st, err := store.Open(store.Options{ConnString: url, MaxConns: 8})
		require.NoError(t, err)
		t.Cleanup(st.Close)
		bundles = append(bundles, start(t, Options{}, st))
	}
	const n = 16
	applied := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := bundles[i%2].post(t, "/api/v1/kv", fmt.Sprintf(`[{"op":"putIfAbsent","ns":"race","key":"k","value":%d,"forever":true}]`, i))
			if r.status == http.StatusOK {
				var m map[string]any
				if res, ok := r.object(t)["results"].([]any); ok && len(res) == 1 {
					m = res[0].(map[string]any)
				}
				applied[i] = m["applied"] == true
			}
		})
	}
	wg.Wait()
	count := 0
	for _, a := range applied {
		if a {
			count++
		}
	}
	require.Equal(t, 1, count)
}
