package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireKVField checks a KV refusal as requireKVError does, plus the field it names.
func requireKVField(t *testing.T, r response, status int, code, reason, field string) {
	t.Helper()
	requireKVError(t, r, status, code, reason)
	require.Equal(t, field, r.object(t)["field"], "body: %s", r.body)
}

// TestKVRefusesValuesPostgreSQLCannotStore: a value (or incr number) that PostgreSQL
// cannot store, or would store far larger than sent, is a 400 kv_bad_body naming the
// field on every route that writes (batch, PUT path, transaction rider), and nothing
// is written; the extremes of float64 are stored and read back.
func TestKVRefusesValuesPostgreSQLCannotStore(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	huge := "[" + strings.TrimSuffix(strings.Repeat("1e131000,", 50), ",") + "]"

	t.Run("Batch", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ name, op, field string }{
			{"NUL", `{"op":"put","ns":"t1","key":"nul","value":"a\u0000b","forever":true}`, "operations[0].value"},
			{"LoneSurrogate", `{"op":"put","ns":"t1","key":"sur","value":"a\ud800b","forever":true}`, "operations[0].value"},
			{"InvalidUTF8", "{\"op\":\"put\",\"ns\":\"t1\",\"key\":\"utf\",\"value\":\"a\xffb\",\"forever\":true}", "operations[0].value"},
			{"ScaleOverflows", `{"op":"put","ns":"t1","key":"small","value":1e-20000,"forever":true}`, "operations[0].value"},
			{"Overflows", `{"op":"putIfAbsent","ns":"t1","key":"big","value":{"n":1e200000},"forever":true}`, "operations[0].value"},
			{"RendersHuge", `{"op":"put","ns":"t1","key":"amp","value":` + huge + `,"forever":true}`, "operations[0].value"},
			{"RendersOverTheLimit", `{"op":"put","ns":"t1","key":"amp","value":1e1001,"forever":true}`, "operations[0].value"},
			{"DeltaOverflows", `{"op":"incr","ns":"t1","key":"c","delta":1e200000,"forever":true}`, "operations[0].delta"},
			{"MaxOverflows", `{"op":"incr","ns":"t1","key":"c","delta":1,"max":1e200000,"forever":true}`, "operations[0].max"},
			{"MinScaleOverflows", `{"op":"incr","ns":"t1","key":"c","delta":1,"min":-1e-20000,"forever":true}`, "operations[0].min"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				requireKVField(t, b.post(t, "/api/v1/kv", `{"operations":[`+tc.op+`]}`), 400, "kv_bad_request", "kv_bad_body", tc.field)
			})
		}
	})

	t.Run("PathPut", func(t *testing.T) {
		t.Parallel()
		for _, body := range []string{`{"value":"a\u0000b","forever":true}`, `{"value":"a\udc00","forever":true}`,
			`{"value":1e200000,"forever":true}`, `{"value":` + huge + `,"forever":true}`} {
			requireKVField(t, b.do(t, http.MethodPut, "/api/v1/kv/t1/path", body), 400, "kv_bad_request", "kv_bad_body", "body.value")
		}
	})

	t.Run("TransactionRider", func(t *testing.T) {
		t.Parallel()
		for _, value := range []string{`"a\u0000b"`, `"a\ud800b"`, `1e-20000`, huge} {
			r := b.post(t, "/api/v1/transaction", `{"kv":[{"op":"put","ns":"t1","key":"tx","value":`+value+`,"forever":true}]}`)
			requireStatus(t, http.StatusBadRequest, r)
			m := r.object(t)
			require.Equal(t, []any{false, "bad_request", "kv_bad_body", "kv[0].value"},
				[]any{m["success"], m["reason"], m["code"], m["field"]}, "body: %s", r.body)
		}
	})

	t.Run("NothingWritten", func(t *testing.T) {
		t.Parallel()
		res := b.kvResults(t, `[{"op":"getMany","ns":"t1","keys":["nul","sur","utf","small","big","amp","c","path","tx"]}]`)
		require.Empty(t, res[0].(map[string]any)["rows"])
	})

	t.Run("Float64ExtremesAreStored", func(t *testing.T) {
		t.Parallel()
		// 1e1000 is no float64: the answers are checked as text.
		r := b.post(t, "/api/v1/kv", `[{"op":"put","ns":"t2","key":"f","value":[1.7976931348623157e308,5e-324,1e1000],"forever":true},
			{"op":"incr","ns":"t2","key":"c","delta":1e-1000,"max":1e1000,"forever":true}]`)
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, 2, strings.Count(string(r.body), `"applied":true`), "body: %s", r.body)
		r = b.get(t, "/api/v1/kv/t2/f")
		requireStatus(t, http.StatusOK, r)
		require.Contains(t, string(r.body), `"value":[17976931348623157`+strings.Repeat("0", 292)+`,0.`+strings.Repeat("0", 323)+`5,1`+
			strings.Repeat("0", 1000)+`]`, "rendered in full by PostgreSQL")
	})
}

// TestKVPathDeleteRefusesTenantField: a tenant field in a DELETE body is refused as on
// PUT (and in the console's list body), never dropped, and the key stays.
func TestKVPathDeleteRefusesTenantField(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.kvResults(t, `[{"op":"put","ns":"p1","key":"b1","value":1,"forever":true}]`)
	for _, f := range []string{"tenant", "tenantId", "_tenant"} {
		r := b.do(t, http.MethodDelete, "/api/v1/kv/p1/b1", `{"`+f+`":"x"}`)
		requireKVField(t, r, 400, "kv_bad_request", "kv_bad_body", "body."+f)
	}
	requireKVField(t, b.do(t, http.MethodPut, "/api/v1/kv/p1/b1", `{"value":2,"forever":true,"tenant":"x"}`),
		400, "kv_bad_request", "kv_bad_body", "body.tenant")
	require.Equal(t, true, b.kvResults(t, `[{"op":"get","ns":"p1","key":"b1"}]`)[0].(map[string]any)["found"])
	for _, f := range []string{"tenant", "tenantId", "_tenant"} {
		requireKVField(t, b.post(t, "/api/v1/resources/kv/list", `{"namespace":"p1","`+f+`":"x"}`),
			400, "kv_bad_request", "kv_bad_body", f)
	}
}

// TestKVAndTimerBodiesOverTheLimit: a body over QUEEN_MAX_BODY_BYTES on a KV or timer
// route is 413 in that family's envelope, with a Content-Length and without one.
func TestKVAndTimerBodiesOverTheLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{MaxBodyBytes: 1024})
	pad := strings.Repeat("x", 2000)
	for _, tc := range []struct {
		name, method, path, body, reason string
	}{
		{"KVBatch", http.MethodPost, "/api/v1/kv", `[{"op":"put","ns":"a","key":"k","forever":true,"value":"` + pad + `"}]`, "kv_body_too_large"},
		{"KVPathPut", http.MethodPut, "/api/v1/kv/a/k", `{"forever":true,"value":"` + pad + `"}`, "kv_body_too_large"},
		{"KVPathDelete", http.MethodDelete, "/api/v1/kv/a/k", `{"expect":0,"pad":"` + pad + `"}`, "kv_body_too_large"},
		{"KVList", http.MethodPost, "/api/v1/resources/kv/list", `{"namespace":"a","prefix":"` + pad + `"}`, "kv_body_too_large"},
		{"Timers", http.MethodPost, "/api/v1/timers", `{"operations":[{"op":"schedule","queue":"q","timerKey":"k","delayMs":1,"txn":"t","payload":"` + pad + `"}]}`, "timers_body_too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, chunked := range []bool{false, true} {
				var rd io.Reader = strings.NewReader(tc.body)
				if chunked {
					rd = struct{ io.Reader }{rd} // no length known: sent chunked
				}
				req, err := http.NewRequestWithContext(t.Context(), tc.method, b.srv.URL+tc.path, rd)
				require.NoError(t, err)
				resp, err := b.srv.Client().Do(req)
				require.NoError(t, err)
				data, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())
				r := response{status: resp.StatusCode, header: resp.Header, body: data}
				requireStatus(t, http.StatusRequestEntityTooLarge, r)
				m := r.object(t)
				require.Equal(t, []any{"payload_too_large", tc.reason, "request body exceeds 1024 bytes"},
					[]any{m["error"], m["reason"], m["detail"]}, "chunked %v, body: %s", chunked, r.body)
			}
		})
	}
}
