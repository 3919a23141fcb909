package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/auth"
	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/dashboard"
)

// compatServer serves opts with a broker that has no store and the instance name
// "cell-7", and the embedded dashboard: any database access would fail the request,
// and any request the dashboard wrongly claimed would answer its HTML.
func compatServer(t *testing.T, opts Options) *testBundle {
	t.Helper()
	dash, err := dashboard.New(dashboard.Options{})
	require.NoError(t, err)
	opts.Dashboard = dash
	cfg := broker.DefaultConfig()
	cfg.Instance = "cell-7"
	srv := httptest.NewServer(New(opts, broker.New(cfg, nil, testLogger(t)), testLogger(t)).Handler())
	t.Cleanup(srv.Close)
	return &testBundle{srv: srv}
}

// noRedirect sends one request and returns its answer without following a redirect.
func noRedirect(t *testing.T, b *testBundle, method, path string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, b.srv.URL+path, nil)
	require.NoError(t, err)
	c := *b.srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := c.Do(req)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	return res
}

const noSuchRoute = `{"error":"Not Found","code":"no_such_route"}`

func requireNoSuchRoute(t *testing.T, r response, what string) {
	t.Helper()
	require.Equal(t, http.StatusNotFound, r.status, "%s: %s", what, r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"), what)
	if !strings.HasPrefix(what, http.MethodHead+" ") { // a HEAD answer has no body
		require.JSONEq(t, noSuchRoute, string(r.body), what)
	}
}

func TestStatusIsJSONLiveness(t *testing.T) {
	t.Parallel()
	for _, jwt := range []bool{false, true} {
		opts := Options{}
		var sg signer
		if jwt {
			opts.Verifier, sg = hsMode(t)
		}
		b := compatServer(t, opts)
		var headers []string
		if jwt {
			// Read-only, as on a 1.x broker: a token is needed, and a write-only one
			// does not pass.
			requireStatus(t, http.StatusUnauthorized, b.get(t, "/status"))
			requireStatus(t, http.StatusForbidden, b.do(t, http.MethodGet, "/status", "",
				"Authorization", "Bearer "+sg.token(t, "producer", "write-only")))
			headers = []string{"Authorization", "Bearer " + sg.token(t, "viewer", "read-only")}
		}
		r := b.do(t, http.MethodGet, "/status", "", headers...)
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
		require.JSONEq(t, `{"status":"ok","engine":"postgres-go"}`, string(r.body), "jwt=%v", jwt)
		requireStatus(t, http.StatusOK, b.do(t, http.MethodHead, "/status", "", headers...))
		if jwt {
			// POST /status routes nowhere: read-write first, as every unknown route.
			requireStatus(t, http.StatusForbidden, b.do(t, http.MethodPost, "/status", "{}", headers...))
			headers = []string{"Authorization", "Bearer " + sg.token(t, "editor", "read-write")}
		}
		requireNoSuchRoute(t, b.do(t, http.MethodPost, "/status", "{}", headers...), "POST /status")
	}
}

func TestAuthRoutesWithoutJWT(t *testing.T) {
	t.Parallel()
	b := compatServer(t, Options{})

	r := b.get(t, "/auth/me")
	requireStatus(t, http.StatusOK, r)
	require.JSONEq(t, `{"user_id":"standalone","email":null,"tenant_slug":"local","is_operator":true,
		"operator_enabled":true,"operator_live":true,"acting_cluster":{"id":"local","slug":"local"},
		"clusters":[{"id":"local","slug":"local","role":"admin","tenant_slug":"local","status":"active",
		"tenant_id":"00000000-0000-0000-0000-000000000001","cell_slug":"cell-7"}],
		"act_cluster_header":"x-queen-act-cluster","role":"admin","cluster":null,"standalone":true}`, string(r.body))

	res := noRedirect(t, b, http.MethodGet, "/auth/login")
	require.Equal(t, http.StatusFound, res.StatusCode)
	require.Equal(t, "/", res.Header.Get("Location"))

	r = b.post(t, "/auth/logout", "")
	requireStatus(t, http.StatusOK, r)
	require.JSONEq(t, `{"ok":true}`, string(r.body))

	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/auth"},
		{http.MethodGet, "/auth/"},
		{http.MethodGet, "/auth/callback"},
		{http.MethodGet, "/auth/me/x"},
		{http.MethodHead, "/auth/session"},
		{http.MethodPost, "/auth/me"},
		{http.MethodGet, "/auth/logout"},
		{http.MethodDelete, "/auth/login"},
	} {
		requireNoSuchRoute(t, b.do(t, c.method, c.path, ""), c.method+" "+c.path)
	}
}

func TestAuthRoutesWithJWT(t *testing.T) {
	t.Parallel()
	v, sg := hsMode(t)
	b := compatServer(t, Options{Verifier: v})

	for _, headers := range [][]string{nil, {"Authorization", "Bearer " + sg.token(t, "ops", "admin")}} {
		r := b.do(t, http.MethodGet, "/auth/me", "", headers...)
		requireStatus(t, http.StatusUnauthorized, r)
		require.JSONEq(t, `{"error":"auth_required","code":"auth_required"}`, string(r.body))
	}

	r := b.get(t, "/auth/login")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, "text/html; charset=utf-8", r.header.Get("Content-Type"))
	require.Contains(t, string(r.body), "queen-proxy")

	r = b.post(t, "/auth/logout", "")
	requireStatus(t, http.StatusOK, r)
	require.JSONEq(t, `{"ok":true}`, string(r.body))
	// Other paths under /auth/ route nowhere: read-write first, as every unknown route.
	requireStatus(t, http.StatusUnauthorized, b.get(t, "/auth/other"))
	requireNoSuchRoute(t, b.do(t, http.MethodGet, "/auth/other", "", bearer(sg.token(t, "ops", "read-write"))...),
		"GET /auth/other with a read-write token")
}

func TestUnmatchedRoutesAnswerNoSuchRoute(t *testing.T) {
	t.Parallel()
	b := compatServer(t, Options{})
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/api"},
		{http.MethodGet, "/api/"},
		{http.MethodGet, "/api/v1/nothing-here"},
		{http.MethodHead, "/api/v1/nothing-here"},
		{http.MethodGet, "/api/v2/push"},
		{http.MethodGet, "/api/v1/kafka/topics"},
		{http.MethodPost, "/api/v1/sqs"},
		{http.MethodGet, "/api/v1/mesh/peers"},
		{http.MethodDelete, "/api/v1/queues/q/clear"},
		{http.MethodPost, "/nope"},
		{http.MethodPut, "/queues/orders"},
		{http.MethodPost, "/streams/v1/nothing"},
		{http.MethodPost, "/internal/api/peers"},
		{http.MethodPatch, "/"},
	} {
		requireNoSuchRoute(t, b.do(t, c.method, c.path, ""), c.method+" "+c.path)
	}

	// GET and HEAD outside /api/ and /auth/ stay the dashboard's, or the old 404.
	r := b.get(t, "/queues/orders")
	requireStatus(t, http.StatusOK, r)
	require.Contains(t, string(r.body), "<!doctype html>")
	requireError(t, b.get(t, "/streams/v1/nothing"), http.StatusNotFound, "not_found", "Not found", "")
	requireError(t, b.get(t, "/metricsx"), http.StatusNotFound, "not_found", "Not found", "")
	// A path with an empty segment (a client's base URL ending in "/") is no page.
	requireError(t, b.get(t, "//api/v1/resources/queues"), http.StatusNotFound, "not_found", "Not found", "")

	// A known path with another method is, as on a 1.x broker, a route that does not
	// exist: in the 0.15 families and in the 1.x ones (KV, timers).
	requireNoSuchRoute(t, b.do(t, http.MethodGet, "/api/v1/push", ""), "GET /api/v1/push")
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/kv"},
		{http.MethodPut, "/api/v1/kv"},
		{http.MethodPost, "/api/v1/kv/orders/a"},
		{http.MethodPatch, "/api/v1/kv/orders/a/b"},
		{http.MethodPost, "/api/v1/resources/kv/namespaces"},
		{http.MethodGet, "/api/v1/resources/kv/list"},
		{http.MethodGet, "/api/v1/timers"},
		{http.MethodPut, "/api/v1/timers"},
		{http.MethodPost, "/api/v1/timers/reminders"},
		{http.MethodPost, "/api/v1/timers/reminders/k1"},
	} {
		r := b.do(t, c.method, c.path, "")
		requireNoSuchRoute(t, r, c.method+" "+c.path)
		require.Empty(t, r.header.Get("Allow"), c.method+" "+c.path)
	}
}

func TestEphemeralFamilyIsRefusedWith404(t *testing.T) {
	t.Parallel()
	const refusal = `{"error":"ephemeral queues are not supported by this broker","code":"ephemeral_unsupported"}`
	requireRefused := func(t *testing.T, r response, what string) {
		t.Helper()
		require.Equal(t, http.StatusNotFound, r.status, "%s: %s", what, r.body)
		require.JSONEq(t, refusal, string(r.body), what)
	}
	listed := []struct{ method, path string }{
		{http.MethodPost, "/api/v1/ephemeral/push"},
		{http.MethodGet, "/api/v1/ephemeral/pop"},
		{http.MethodPost, "/api/v1/ephemeral/ack"},
		{http.MethodPost, "/api/v1/ephemeral/configure"},
		{http.MethodPost, "/api/v1/ephemeral/reset"},
		{http.MethodDelete, "/api/v1/ephemeral/queue/jobs"},
		{http.MethodGet, "/api/v1/ephemeral/queues"},
		{http.MethodGet, "/api/v1/ephemeral/queues/jobs/depth"},
		{http.MethodGet, "/api/v1/system/ephemeral"},
		{http.MethodPost, "/api/v1/system/ephemeral"},
	}
	require.Len(t, listed, len(ephemeralRoutes))

	t.Run("JWTOff", func(t *testing.T) {
		t.Parallel()
		b := compatServer(t, Options{})
		for _, c := range listed {
			requireRefused(t, b.do(t, c.method, c.path, `{"queue":"jobs","items":[]}`), c.method+" "+c.path)
		}
		// Other methods and paths of the family: the same refusal, never a 405 or 5xx.
		for _, c := range []struct{ method, path string }{
			{http.MethodGet, "/api/v1/ephemeral/push"},
			{http.MethodPut, "/api/v1/system/ephemeral"},
			{http.MethodGet, "/api/v1/ephemeral/queue/jobs"},
			{http.MethodGet, "/api/v1/ephemeral/whatever"},
		} {
			requireRefused(t, b.do(t, c.method, c.path, ""), c.method+" "+c.path)
		}
	})

	t.Run("WhateverTheRequestCarries", func(t *testing.T) {
		t.Parallel()
		// Names, parameters and bodies other routes refuse with a 400 or 413 are never
		// looked at: a 1.x client reads only a 404 as "not supported".
		b := compatServer(t, Options{MaxBodyBytes: 64})
		long := strings.Repeat("a", 300)
		for _, c := range []struct{ method, path, body string }{
			{http.MethodGet, "/api/v1/ephemeral/queues/" + long + "/depth", ""},
			{http.MethodDelete, "/api/v1/ephemeral/queue/" + long, ""},
			{http.MethodGet, "/api/v1/ephemeral/pop?queue=" + long, ""},
			{http.MethodGet, "/api/v1/ephemeral/pop?queue=%ff", ""},
			{http.MethodPost, "/api/v1/ephemeral/push?x=%00", "{}"},
			{http.MethodGet, "/api/v1/system/ephemeral?" + long + "=1", ""},
			{http.MethodPost, "/api/v1/ephemeral/push", `{"items":"` + long + `"}`},
			{http.MethodPost, "/api/v1/system/ephemeral", `{"on":"` + long + `"}`},
		} {
			requireRefused(t, b.do(t, c.method, c.path, c.body), c.method+" "+c.path)
		}
	})

	t.Run("JWTOnKeepsTheLevels", func(t *testing.T) {
		t.Parallel()
		v, sg := hsMode(t)
		b := compatServer(t, Options{Verifier: v})
		admin := "Bearer " + sg.token(t, "ops", "admin")
		for _, c := range listed {
			requireRefused(t, b.do(t, c.method, c.path, "", "Authorization", admin), c.method+" "+c.path)
			requireStatus(t, http.StatusUnauthorized, b.do(t, c.method, c.path, ""))
		}
		r := b.do(t, http.MethodGet, "/api/v1/system/ephemeral", "", "Authorization", "Bearer "+sg.token(t, "dev", "read-write"))
		requireStatus(t, http.StatusForbidden, r)
	})
}

func TestCompatRoutesHaveTheirLevels(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"GET /auth/me", "GET /auth/login", "POST /auth/logout"} {
		require.Equal(t, auth.Public, routeLevels[p], p)
		require.Equal(t, tenantIgnored, tenantScope[p], p)
	}
	for _, p := range []string{"GET /status", "HEAD /status"} {
		require.Equal(t, auth.ReadOnly, routeLevels[p], p)
		require.Equal(t, tenantIgnored, tenantScope[p], p)
	}
	for _, e := range ephemeralRoutes {
		key := e.method + " " + e.pattern
		_, ok := routeLevels[key]
		require.True(t, ok, key)
		require.True(t, strings.HasPrefix(e.pattern, "/api/v1/"), key)
	}
	require.Equal(t, auth.WriteOnly, routeLevels["POST /api/v1/ephemeral/push"])
	require.Equal(t, auth.Admin, routeLevels["POST /api/v1/system/ephemeral"])
}

func TestMigrationRoutesAnswer404BehindTheAdminLevel(t *testing.T) {
	t.Parallel()
	v, sg := hsMode(t)
	for _, opts := range []Options{{}, {Verifier: v}} {
		b := compatServer(t, opts)
		for _, m := range migrationRoutes {
			what := m.method + " " + m.pattern
			require.Equal(t, auth.Admin, routeLevels[what], what)
			if opts.Verifier != nil {
				requireStatus(t, http.StatusUnauthorized, b.do(t, m.method, m.pattern, "{}"))
				requireStatus(t, http.StatusForbidden, b.do(t, m.method, m.pattern, "{}",
					"Authorization", "Bearer "+sg.token(t, "viewer", "read-only")))
				requireNoSuchRoute(t, b.do(t, m.method, m.pattern, "{}", "Authorization", "Bearer "+sg.token(t, "ops", "admin")), what)
				continue
			}
			requireNoSuchRoute(t, b.do(t, m.method, m.pattern, "{}"), what)
		}
	}
}
