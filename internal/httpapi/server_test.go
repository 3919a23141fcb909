package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

func TestRouting(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})

	t.Run("UnknownPathsAreJSON404", func(t *testing.T) {
		t.Parallel()
		// Under /api/ and /auth/, and for any method but GET and HEAD: the 1.x
		// clients' "no such route" (compat_test.go walks more).
		for _, c := range []struct{ method, path string }{
			{http.MethodGet, "/api/v1/nothing-here"},
			{http.MethodGet, "/api/v1/resources/nothing"},
			{http.MethodGet, "/api/v1/not-a-route/x"},
			{http.MethodPost, "/streams/v1/nothing"},
			{http.MethodPost, "/internal/api/peers"},
			{http.MethodDelete, "/api/v1/queues/q/clear"},
		} {
			r := b.do(t, c.method, c.path, "")
			requireError(t, r, http.StatusNotFound, "no_such_route", "Not Found", "")
			require.JSONEq(t, `{"error":"Not Found","code":"no_such_route"}`, string(r.body))
		}
		// Other GETs (the dashboard's ground when it is on) keep the generic 404, a
		// path with an empty segment (a base URL ending in "/") included.
		for _, path := range []string{"/nope", "/metricsx", "/streams/v1/nothing", "//api/v1/resources/queues"} {
			r := b.get(t, path)
			requireError(t, r, http.StatusNotFound, "not_found", "Not found", "")
			require.JSONEq(t, `{"error":"Not found","code":"not_found"}`, string(r.body))
		}
	})

	t.Run("WrongMethodIsNoSuchRoute", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct{ method, path string }{
			{http.MethodGet, "/api/v1/push"},
			{http.MethodPut, "/api/v1/resources/queues/orders"},
			{http.MethodPost, "/health"},
			{http.MethodDelete, "/streams/v1/cycle"},
		} {
			r := b.do(t, c.method, c.path, "{}")
			requireError(t, r, http.StatusNotFound, "no_such_route", "Not Found", "")
			require.Empty(t, r.header.Get("Allow"), "%s %s", c.method, c.path)
		}
		// A GET outside /api/ and /auth/ answers as an unknown GET there.
		requireError(t, b.get(t, "/streams/v1/cycle"), http.StatusNotFound, "not_found", "Not found", "")
	})

	t.Run("NamespacePopFollowsPriority", func(t *testing.T) {
		t.Parallel()
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure",
			`{"queue":"nsp.low","namespace":"nsp","task":"t","options":{"priority":1}}`))
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure",
			`{"queue":"nsp.high","namespace":"nsp","task":"t","options":{"priority":9}}`))
		b.pushOne(t, "nsp.low", "", "low-1", `1`)
		b.pushOne(t, "nsp.high", "", "high-1", `2`)

		first := b.get(t, "/api/v1/pop?namespace=nsp&task=t&autoAck=true")
		requireStatus(t, http.StatusOK, first)
		body := first.object(t)
		require.Equal(t, "nsp.high", body["queue"], "the highest-priority queue is served first")
		msgs := body["messages"].([]any)
		require.Equal(t, "high-1", msgs[0].(map[string]any)["transactionId"])
		require.Equal(t, "nsp.high", msgs[0].(map[string]any)["queue"])

		second := b.get(t, "/api/v1/pop?namespace=nsp&autoAck=true")
		requireStatus(t, http.StatusOK, second)
		require.Equal(t, "nsp.low", second.object(t)["queue"])
		requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop?namespace=nsp&autoAck=true"))

		requireError(t, b.get(t, "/api/v1/pop"), http.StatusBadRequest, "invalid_argument",
			"namespace or task is required (or pop /api/v1/pop/queue/{queue})", "namespace")
	})

	t.Run("RequestIDIsEchoedOrGenerated", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodGet, "/health/live", "", "X-Request-Id", "abc-123")
		require.Equal(t, "abc-123", r.header.Get("X-Request-Id"))

		r = b.get(t, "/health/live")
		require.True(t, queue.IsUUID(r.header.Get("X-Request-Id")), r.header.Get("X-Request-Id"))

		r = b.do(t, http.MethodGet, "/health/live", "", "X-Request-Id", strings.Repeat("x", 200))
		require.True(t, queue.IsUUID(r.header.Get("X-Request-Id")))
	})
}

func TestBodyParsing(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{MaxBodyBytes: 1024})
	bodyRoutes := []string{"/api/v1/push", "/api/v1/ack", "/api/v1/ack/batch", "/api/v1/transaction", "/api/v1/configure"}

	t.Run("EmptyBodyIsRejected", func(t *testing.T) {
		t.Parallel()
		for _, path := range bodyRoutes {
			requireError(t, b.post(t, path, ""), http.StatusBadRequest, "invalid_argument", "Empty request body", "")
			requireError(t, b.post(t, path, "  \n"), http.StatusBadRequest, "invalid_argument", "Empty request body", "")
		}
	})

	t.Run("MalformedJSONIsRejected", func(t *testing.T) {
		t.Parallel()
		for _, path := range bodyRoutes {
			r := b.post(t, path, `{"items":[}`)
			requireStatus(t, http.StatusBadRequest, r)
			m := r.object(t)
			require.Equal(t, "invalid_argument", m["code"])
			require.True(t, strings.HasPrefix(m["error"].(string), "Invalid JSON: "), m["error"])
		}
		r := b.post(t, "/api/v1/push", `{"items":[]} trailing`)
		requireStatus(t, http.StatusBadRequest, r)
		require.Contains(t, r.object(t)["error"], "Invalid JSON: ")
	})

	t.Run("TopLevelMustBeAnObject", func(t *testing.T) {
		t.Parallel()
		for _, body := range []string{`[]`, `"x"`, `42`, `null`} {
			requireError(t, b.post(t, "/api/v1/push", body), http.StatusBadRequest, "invalid_argument",
				"Request body must be a JSON object", "")
		}
	})

	t.Run("OversizeBodyIs413AndStoresNothing", func(t *testing.T) {
		t.Parallel()
		big := `{"items":[{"queue":"oversize","payload":"` + strings.Repeat("x", 2000) + `"}]}`
		r := b.post(t, "/api/v1/push", big)
		requireError(t, r, http.StatusRequestEntityTooLarge, "payload_too_large", "request body exceeds 1024 bytes", "")
		require.JSONEq(t, `{"error":"request body exceeds 1024 bytes","code":"payload_too_large"}`, string(r.body))

		// Without a Content-Length the limit is enforced while reading.
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.srv.URL+"/api/v1/push",
			struct{ *strings.Reader }{strings.NewReader(big)})
		require.NoError(t, err)
		resp, err := b.srv.Client().Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)

		_, err = b.broker.QueueGet(t.Context(), "oversize")
		require.ErrorIs(t, err, queue.ErrNotFound)

		// A transaction is refused in its own envelope, with or without a Content-Length.
		tx := `{"operations":[{"type":"push","items":[{"queue":"oversize","payload":"` + strings.Repeat("x", 2000) + `"}]}]}`
		r = b.post(t, "/api/v1/transaction", tx)
		requireStatus(t, http.StatusRequestEntityTooLarge, r)
		refusal := r.object(t)
		require.True(t, queue.IsUUID(refusal["transactionId"].(string)), "a minted id: %s", r.body)
		delete(refusal, "transactionId")
		require.Equal(t, map[string]any{"success": false, "reason": "payload_too_large",
			"error": "request body exceeds 1024 bytes", "code": "payload_too_large", "results": []any{}}, refusal)
		req, err = http.NewRequestWithContext(t.Context(), http.MethodPost, b.srv.URL+"/api/v1/transaction",
			struct{ *strings.Reader }{strings.NewReader(tx)})
		require.NoError(t, err)
		resp, err = b.srv.Client().Do(req)
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
		require.Contains(t, string(raw), `"reason":"payload_too_large"`)
		_, err = b.broker.QueueGet(t.Context(), "oversize")
		require.ErrorIs(t, err, queue.ErrNotFound)
	})
}

func TestCORS(t *testing.T) {
	t.Parallel()
	st, err := store.Open(store.Options{ConnString: "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1"})
	require.NoError(t, err)
	t.Cleanup(st.Close)

	requireNoCORS := func(t *testing.T, r response) {
		t.Helper()
		for name := range r.header {
			require.False(t, strings.HasPrefix(strings.ToLower(name), "access-control-"), "unexpected header %s", name)
		}
	}

	t.Run("OffSendsNoHeaders", func(t *testing.T) {
		t.Parallel()
		b := start(t, Options{}, st)
		r := b.do(t, http.MethodGet, "/health/live", "", "Origin", "https://ops.example.com")
		requireStatus(t, http.StatusOK, r)
		requireNoCORS(t, r)

		r = b.do(t, http.MethodOptions, "/api/v1/push", "", "Origin", "https://ops.example.com",
			"Access-Control-Request-Method", "POST")
		requireStatus(t, http.StatusNoContent, r)
		require.Empty(t, r.body)
		requireNoCORS(t, r)
	})

	t.Run("AllowlistEchoesExactOrigin", func(t *testing.T) {
		t.Parallel()
		b := start(t, Options{CORSAllowedOrigins: []string{"https://ops.example.com"}}, st)
		r := b.do(t, http.MethodGet, "/health/live", "", "Origin", "https://ops.example.com")
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, "https://ops.example.com", r.header.Get("Access-Control-Allow-Origin"))
		require.Equal(t, "GET, POST, PUT, DELETE, OPTIONS", r.header.Get("Access-Control-Allow-Methods"))
		require.Equal(t, "Content-Type, Authorization", r.header.Get("Access-Control-Allow-Headers"))
		require.Contains(t, r.header.Values("Vary"), "Origin")

		r = b.do(t, http.MethodOptions, "/api/v1/push", "", "Origin", "https://ops.example.com",
			"Access-Control-Request-Method", "POST")
		requireStatus(t, http.StatusNoContent, r)
		require.Empty(t, r.body)
		require.Equal(t, "https://ops.example.com", r.header.Get("Access-Control-Allow-Origin"))
		require.Equal(t, "86400", r.header.Get("Access-Control-Max-Age"))

		r = b.do(t, http.MethodGet, "/health/live", "", "Origin", "https://evil.example.com")
		requireNoCORS(t, r)
		r = b.do(t, http.MethodGet, "/nope", "", "Origin", "https://ops.example.com")
		requireStatus(t, http.StatusNotFound, r)
		require.Equal(t, "https://ops.example.com", r.header.Get("Access-Control-Allow-Origin"))
	})

	t.Run("StarOnlyWhenConfigured", func(t *testing.T) {
		t.Parallel()
		b := start(t, Options{CORSAllowedOrigins: []string{"*"}}, st)
		r := b.do(t, http.MethodGet, "/health/live", "", "Origin", "https://anything.example")
		require.Equal(t, "*", r.header.Get("Access-Control-Allow-Origin"))
		require.NotContains(t, r.header.Values("Vary"), "Origin")
	})

	t.Run("NeverOnThePrometheusScrape", func(t *testing.T) {
		t.Parallel()
		b := start(t, Options{CORSAllowedOrigins: []string{"*"}}, st)
		r := b.do(t, http.MethodGet, "/metrics/prometheus", "", "Origin", "https://anything.example")
		requireStatus(t, http.StatusOK, r)
		requireNoCORS(t, r)
		require.Equal(t, "no-cache", r.header.Get("Cache-Control"))
	})
}

func TestHealth(t *testing.T) {
	t.Parallel()

	t.Run("HealthyWithDatabase", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Options{Version: "1.2.3"})
		r := b.get(t, "/health")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"status":"healthy","database":"connected","server":"queen","worker_id":0,
			"version":"1.2.3","shared_state":{"enabled":false},"queen":{"worker_id":0,"status":"active"}}`, string(r.body))

		requireStatus(t, http.StatusOK, b.do(t, http.MethodHead, "/health", ""))
		r = b.get(t, "/health/live")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"status":"alive"}`, string(r.body))
		r = b.get(t, "/health/ready")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"status":"ready"}`, string(r.body))
	})

	t.Run("UnhealthyWithoutDatabase", func(t *testing.T) {
		t.Parallel()
		st, err := store.Open(store.Options{ConnString: "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1"})
		require.NoError(t, err)
		t.Cleanup(st.Close)
		b := start(t, Options{Version: "1.2.3"}, st)

		r := b.get(t, "/health")
		requireStatus(t, http.StatusServiceUnavailable, r)
		m := r.object(t)
		require.Equal(t, "unhealthy", m["status"])
		require.Equal(t, "disconnected", m["database"])
		require.Equal(t, "1.2.3", m["version"])

		r = b.get(t, "/health/live")
		requireStatus(t, http.StatusOK, r)
		r = b.get(t, "/health/ready")
		requireStatus(t, http.StatusServiceUnavailable, r)
		require.JSONEq(t, `{"status":"not_ready","error":"database unreachable and no disk spool to take pushes","database":"unreachable"}`,
			string(r.body))

		// A database outage on a business route is 503 with Retry-After.
		r = b.get(t, "/api/v1/resources/queues")
		requireError(t, r, http.StatusServiceUnavailable, "unavailable", "database unavailable", "")
		require.Equal(t, "1", r.header.Get("Retry-After"))
		require.Equal(t, false, r.object(t)["success"])
		require.Equal(t, r.header.Get("X-Request-Id"), r.object(t)["request_id"])

		// The 1.x routes answer in their own envelopes, whose error field clients branch on.
		for _, tc := range []struct{ method, path, body, want string }{
			{http.MethodPost, "/api/v1/timers", `{"operations":[{"op":"schedule","queue":"q","timerKey":"k","delayMs":1,"txn":"t","payload":"eyJhIjoxfQ=="}]}`,
				`{"error":"timers_unavailable","reason":"timers_unavailable","detail":"the database is unavailable or did not answer in time; retry"}`},
			{http.MethodGet, "/api/v1/timers/q/k", "",
				`{"error":"timers_unavailable","reason":"timers_unavailable","detail":"the database is unavailable or did not answer in time; retry"}`},
			{http.MethodPost, "/api/v1/kv", `[{"op":"get","ns":"n","key":"k"}]`,
				`{"error":"kv_unavailable","detail":"the database is unavailable or did not answer in time; retry"}`},
		} {
			r := b.do(t, tc.method, tc.path, tc.body)
			requireStatus(t, http.StatusServiceUnavailable, r)
			require.JSONEq(t, tc.want, string(r.body), "%s %s", tc.method, tc.path)
			require.Equal(t, "1", r.header.Get("Retry-After"), "%s %s", tc.method, tc.path)
		}
	})

	t.Run("NotReadyWhenReadyFuncFails", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Options{ReadyFunc: func(context.Context) error { return errors.New("shutting down") }})
		r := b.get(t, "/health/ready")
		requireStatus(t, http.StatusServiceUnavailable, r)
		require.JSONEq(t, `{"status":"not_ready","error":"shutting down"}`, string(r.body))
		requireStatus(t, http.StatusOK, b.get(t, "/health"))
	})
}
