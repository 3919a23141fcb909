package daemon_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCORS: with QUEEN_PROXY_CORS_ALLOWED_ORIGINS a browser app on an allowed origin
// gets its preflight answered without a credential and the CORS headers on every
// answer, the proxy's own errors and the relayed broker answers alike (the broker's
// own CORS headers are not relayed); another origin gets none. Without the setting an
// OPTIONS request is routed like any other.
func TestCORS(t *testing.T) {
	t.Parallel()
	const app = "http://app.example"
	// The broker allows every origin: none of its CORS headers may leak through.
	b := setup(t, setupOpts{env: []string{"QUEEN_PROXY_CORS_ALLOWED_ORIGINS=" + app},
		brokerEnv: []string{"CORS_ALLOWED_ORIGINS=*"}})
	createTenant(t, b.proxy, tenantSpec{ID: "acme"})
	k := createKey(t, b.proxy, "acme", "write")
	p := b.proxy

	pre := call(t, http.MethodOptions, p.URL+"/api/v1/push", "", nil,
		"Origin", app, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization,content-type")
	require.Equal(t, http.StatusNoContent, pre.status, "%s", pre.body)
	require.Equal(t, app, pre.header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, pre.header.Get("Access-Control-Allow-Headers"), "Authorization")
	require.Contains(t, pre.header.Get("Access-Control-Allow-Methods"), "POST")
	require.NotEmpty(t, pre.header.Get("Access-Control-Max-Age"))

	r := call(t, http.MethodPost, p.URL+"/api/v1/push", k.Key, pushBody("orders", 1, nil), "Origin", app)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.Equal(t, []string{app}, r.header.Values("Access-Control-Allow-Origin"), "the proxy's policy, not the broker's *")
	require.Contains(t, r.header.Values("Vary"), "Origin")

	r = call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", "", nil, "Origin", app)
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.Equal(t, app, r.header.Get("Access-Control-Allow-Origin"), "a browser app can read the proxy's own errors")

	r = call(t, http.MethodPost, p.URL+"/api/v1/push", k.Key, pushBody("orders", 1, nil), "Origin", "http://evil.example")
	require.Equal(t, http.StatusCreated, r.status)
	require.Empty(t, r.header.Get("Access-Control-Allow-Origin"), "another origin")
	pre = call(t, http.MethodOptions, p.URL+"/api/v1/push", "", nil,
		"Origin", "http://evil.example", "Access-Control-Request-Method", "POST")
	require.NotEqual(t, http.StatusNoContent, pre.status, "another origin's preflight is not answered")
	require.Empty(t, pre.header.Get("Access-Control-Allow-Origin"))

	off := setup(t, setupOpts{})
	pre = call(t, http.MethodOptions, off.proxy.URL+"/api/v1/push", "", nil, "Origin", app, "Access-Control-Request-Method", "POST")
	require.Equal(t, http.StatusNotFound, pre.status, "no CORS configured: routed like any request")
	require.Empty(t, pre.header.Get("Access-Control-Allow-Origin"))
}
