package daemon_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// send makes a request with the given headers (pairs) and body, without following
// redirects.
func send(t *testing.T, method, u string, body io.Reader, hdr ...string) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, body)
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := noRedirect.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: raw}
}

func createUser(t *testing.T, p *proxytest.Proxy, name, password, role, tenantID string) {
	t.Helper()
	body := map[string]any{"username": name, "password": password, "role": role}
	if tenantID != "" {
		body["tenant"] = tenantID
	}
	var out map[string]any
	require.Equal(t, http.StatusCreated, p.Admin(t, http.MethodPost, "/admin/v1/users", body, &out), "%v", out)
	require.Equal(t, name, out["username"])
}

// login logs in with JSON and returns the session token from the cookie.
func login(t *testing.T, p *proxytest.Proxy, name, password string) string {
	t.Helper()
	r := call(t, http.MethodPost, p.URL+"/api/login", "", map[string]string{"username": name, "password": password})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == "token" {
			require.True(t, c.HttpOnly)
			require.Equal(t, http.SameSiteLaxMode, c.SameSite)
			require.Equal(t, "/", c.Path)
			require.NotEmpty(t, c.Value)
			return c.Value
		}
	}
	t.Fatalf("no token cookie in %v", r.header)
	return ""
}

type me struct {
	Username string  `json:"username"`
	Role     string  `json:"role"`
	Kind     string  `json:"kind"`
	Tenant   *string `json:"tenant"`
	KeyID    string  `json:"keyId"`
	Scope    string  `json:"scope"`
}

func TestLoginSessions(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{login: true})
	createTenant(t, b.proxy, tenantSpec{ID: "acme"})
	createUser(t, b.proxy, "op", "operator-password", "admin", "")
	createUser(t, b.proxy, "alice", "alice-password", "read-write", "acme")

	t.Run("RefusesBadCredentials", func(t *testing.T) {
		for _, creds := range [][2]string{{"alice", "wrong-password"}, {"nobody", "alice-password"}} {
			r := call(t, http.MethodPost, b.proxy.URL+"/api/login", "", map[string]string{"username": creds[0], "password": creds[1]})
			require.Equal(t, http.StatusUnauthorized, r.status)
			var e struct{ Error string }
			r.json(t, &e)
			require.Equal(t, "Invalid credentials", e.Error)
		}
		r := call(t, http.MethodPost, b.proxy.URL+"/api/login", "", map[string]string{"username": "alice"})
		require.Equal(t, http.StatusBadRequest, r.status)
		r = call(t, http.MethodPost, b.proxy.URL+"/api/login", "", map[string]string{"username": "alice",
			"password": "alice-password", "redirect_uri": "//evil.example/x"})
		require.Equal(t, http.StatusBadRequest, r.status)
		var e struct{ Field string }
		r.json(t, &e)
		require.Equal(t, "redirect_uri", e.Field)
	})

	alice := login(t, b.proxy, "alice", "alice-password")
	op := login(t, b.proxy, "op", "operator-password")

	t.Run("TokenIsOursAlone", func(t *testing.T) {
		raw, err := base64.RawURLEncoding.DecodeString(strings.Split(alice, ".")[1])
		require.NoError(t, err)
		var claims map[string]any
		require.NoError(t, json.Unmarshal(raw, &claims))
		require.Equal(t, "queen-proxy", claims["aud"])
		require.Equal(t, "read-write", claims["qp_role"])
		require.Equal(t, "acme", claims["qp_tenant"])
		require.NotContains(t, claims, "role")
		conn, err := pgx.Connect(t.Context(), b.proxy.DBURL)
		require.NoError(t, err)
		defer conn.Close(context.WithoutCancel(t.Context()))
		var n int
		require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM queen_proxy.sessions WHERE id = $1`, claims["jti"]).Scan(&n))
		require.Equal(t, 1, n, "the jti is not a session row")
	})

	t.Run("MeShowsTheUser", func(t *testing.T) {
		var m me
		r := call(t, http.MethodGet, b.proxy.URL+"/api/me", alice, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.json(t, &m)
		require.Equal(t, "alice", m.Username)
		require.Equal(t, "user", m.Kind)
		require.Equal(t, "acme", *m.Tenant)
		r = call(t, http.MethodGet, b.proxy.URL+"/api/me", op, nil)
		r.json(t, &m)
		require.Equal(t, "op", m.Username)
		require.Nil(t, m.Tenant)
		k := createKey(t, b.proxy, "acme", "read")
		r = call(t, http.MethodGet, b.proxy.URL+"/api/me", k.Key, nil)
		r.json(t, &m)
		require.Equal(t, "apikey", m.Kind)
		require.Equal(t, k.ID, m.KeyID)
		require.Equal(t, "read", m.Scope)
		require.Equal(t, http.StatusUnauthorized, call(t, http.MethodGet, b.proxy.URL+"/api/me", "", nil).status)
	})

	t.Run("TenantUserIsScoped", func(t *testing.T) {
		r := call(t, http.MethodPost, b.proxy.URL+"/api/v1/push", alice, pushBody("orders", 2, nil))
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		require.Equal(t, 2, brokerQueues(t, b.broker)["acme:orders"], "the push is not in acme's scope at the broker")
		before := brokerAPIRequests(t, b.broker)
		r = call(t, http.MethodGet, b.proxy.URL+"/api/v1/system/maintenance", alice, nil)
		require.Equal(t, http.StatusForbidden, r.status)
		require.Equal(t, before, brokerAPIRequests(t, b.broker), "a tenant user's global request reached the broker")
	})

	t.Run("OperatorIsGlobal", func(t *testing.T) {
		r := call(t, http.MethodGet, b.proxy.URL+"/api/v1/system/maintenance", op, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r = call(t, http.MethodGet, b.proxy.URL+"/api/v1/resources/queues", op, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var list api.QueueList
		r.json(t, &list)
		require.Len(t, list.Queues, 1)
		require.Equal(t, "acme:orders", list.Queues[0].Name, "operators must be forwarded without a tenant")
	})

	t.Run("OperatorAdminSessionOpensTheAdminAPI", func(t *testing.T) {
		r := call(t, http.MethodGet, b.proxy.AdminURL+"/admin/v1/tenants", op, nil)
		require.Equal(t, http.StatusOK, r.status)
		require.Equal(t, http.StatusUnauthorized, call(t, http.MethodGet, b.proxy.AdminURL+"/admin/v1/tenants", alice, nil).status)
		var users struct {
			Users []struct{ Username string } `json:"users"`
		}
		call(t, http.MethodGet, b.proxy.AdminURL+"/admin/v1/users", op, nil).json(t, &users)
		require.Len(t, users.Users, 2)
	})

	t.Run("CookieNeedsOurOrigin", func(t *testing.T) {
		r := send(t, http.MethodGet, b.proxy.URL+"/api/me", nil, "Cookie", "token="+alice, "Sec-Fetch-Site", "same-origin")
		require.Equal(t, http.StatusOK, r.status)
		r = send(t, http.MethodGet, b.proxy.URL+"/api/v1/pop/queue/orders?wait=false", nil, "Cookie", "token="+alice,
			"Sec-Fetch-Site", "cross-site")
		require.Equal(t, http.StatusForbidden, r.status)
		r = send(t, http.MethodGet, b.proxy.URL+"/api/me", nil, "Cookie", "token="+alice, "Origin", "https://evil.example")
		require.Equal(t, http.StatusForbidden, r.status)
	})

	t.Run("NavigationsGoToLogin", func(t *testing.T) {
		r := send(t, http.MethodGet, b.proxy.URL+"/", nil, "Accept", "text/html")
		require.Equal(t, http.StatusFound, r.status)
		require.Equal(t, "/login?redirect_uri=%2F", r.header.Get("Location"))
		r = send(t, http.MethodGet, b.proxy.URL+"/api/v1/resources/queues", nil, "Sec-Fetch-Mode", "navigate")
		require.Equal(t, http.StatusFound, r.status)
		r = send(t, http.MethodGet, b.proxy.URL+"/api/v1/resources/queues", nil, "Accept", "application/json")
		require.Equal(t, http.StatusUnauthorized, r.status)
		r = send(t, http.MethodGet, b.proxy.URL+"/", nil, "Accept", "text/html", "Cookie", "token="+alice)
		require.NotEqual(t, http.StatusFound, r.status, "a session still goes to the login page")
	})

	t.Run("LoginPageWorksWithoutScript", func(t *testing.T) {
		r := send(t, http.MethodGet, b.proxy.URL+"/login?redirect_uri=/queues", nil)
		require.Equal(t, http.StatusOK, r.status)
		require.Contains(t, r.header.Get("Content-Security-Policy"), "default-src 'none'")
		require.Contains(t, string(r.body), `<form method="post" action="/api/login">`)
		require.Contains(t, string(r.body), `value="/queues"`)
		require.NotContains(t, string(r.body), "<script")
		require.Equal(t, http.StatusOK, send(t, http.MethodGet, b.proxy.URL+"/login/login.css", nil).status)

		form := url.Values{"username": {"alice"}, "password": {"alice-password"}, "redirect_uri": {"/queues"}}
		r = send(t, http.MethodPost, b.proxy.URL+"/api/login", strings.NewReader(form.Encode()),
			"Content-Type", "application/x-www-form-urlencoded")
		require.Equal(t, http.StatusSeeOther, r.status)
		require.Equal(t, "/queues", r.header.Get("Location"))
		require.Contains(t, r.header.Get("Set-Cookie"), "token=")
		form.Set("password", "nope")
		r = send(t, http.MethodPost, b.proxy.URL+"/api/login", strings.NewReader(form.Encode()),
			"Content-Type", "application/x-www-form-urlencoded")
		require.Equal(t, http.StatusUnauthorized, r.status)
		require.Contains(t, string(r.body), "Invalid credentials")
	})

	t.Run("AuthConfig", func(t *testing.T) {
		var cfg struct {
			Google  struct{ Enabled bool } `json:"google"`
			APIKeys struct{ Enabled bool } `json:"apiKeys"`
		}
		r := call(t, http.MethodGet, b.proxy.URL+"/api/auth/config", "", nil)
		r.json(t, &cfg)
		require.False(t, cfg.Google.Enabled)
		require.True(t, cfg.APIKeys.Enabled)
		require.Equal(t, http.StatusServiceUnavailable, call(t, http.MethodGet, b.proxy.URL+"/api/auth/google", "", nil).status)
	})

	t.Run("LogoutEndsTheSession", func(t *testing.T) {
		tok := login(t, b.proxy, "alice", "alice-password")
		require.Equal(t, http.StatusOK, call(t, http.MethodGet, b.proxy.URL+"/api/me", tok, nil).status)
		r := call(t, http.MethodPost, b.proxy.URL+"/api/logout", tok, nil)
		require.Equal(t, http.StatusOK, r.status)
		require.Contains(t, r.header.Get("Set-Cookie"), "Max-Age=0")
		require.Equal(t, http.StatusUnauthorized, call(t, http.MethodGet, b.proxy.URL+"/api/me", tok, nil).status)
		require.Equal(t, http.StatusUnauthorized, call(t, http.MethodGet, b.proxy.URL+"/api/v1/resources/queues", tok, nil).status)
	})

	t.Run("PasswordChangeEndsSessions", func(t *testing.T) {
		createUser(t, b.proxy, "carol", "carol-password", "read-only", "acme")
		tok := login(t, b.proxy, "carol", "carol-password")
		require.Equal(t, http.StatusOK, b.proxy.Admin(t, http.MethodPost, "/admin/v1/users/carol/password",
			map[string]string{"password": "carol-password-2"}, nil))
		eventually(t, 2e9, func() bool {
			return call(t, http.MethodGet, b.proxy.URL+"/api/me", tok, nil).status == http.StatusUnauthorized
		}, "the old session survives a password change")
		login(t, b.proxy, "carol", "carol-password-2")
		require.Equal(t, http.StatusOK, b.proxy.Admin(t, http.MethodDelete, "/admin/v1/users/carol", nil, nil))
		require.Equal(t, http.StatusNotFound, b.proxy.Admin(t, http.MethodDelete, "/admin/v1/users/carol", nil, nil))
	})
}

// Ten failed logins lock the user out with 429, the right password included.
func TestLoginLockout(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{login: true})
	createUser(t, b.proxy, "dave", "dave-password", "read-only", "")
	for range 10 {
		r := call(t, http.MethodPost, b.proxy.URL+"/api/login", "", map[string]string{"username": "dave", "password": "wrong-password"})
		require.Equal(t, http.StatusUnauthorized, r.status)
	}
	r := call(t, http.MethodPost, b.proxy.URL+"/api/login", "", map[string]string{"username": "dave", "password": "dave-password"})
	require.Equal(t, http.StatusTooManyRequests, r.status)
	require.Equal(t, "rate_limited", r.code(t))
	require.NotEmpty(t, r.header.Get("Retry-After"))
}
