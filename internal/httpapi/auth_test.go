package httpapi

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/auth"
	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/store"
	"github.com/queenmq/queen/internal/testlog"
)

const (
	testJWTSecret   = "queen-test-secret-0123456789abcdef"
	testJWTAudience = "queen"
)

// signer mints tokens for one verifier mode.
type signer struct {
	method jwt.SigningMethod
	key    any // signing key
	wrong  any // a key of the same type that the broker does not trust
	kid    string
}

// token mints a token for sub with role ("" for none), valid for an hour, for the
// test audience; kv overrides claims (a nil value deletes the claim).
func (sg signer) token(t *testing.T, sub, role string, kv ...any) string {
	t.Helper()
	return sg.sign(t, sg.key, sub, role, kv...)
}

func (sg signer) sign(t *testing.T, key any, sub, role string, kv ...any) string {
	t.Helper()
	now := time.Now()
	c := jwt.MapClaims{"sub": sub, "aud": testJWTAudience, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	if role != "" {
		c["role"] = role
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(c, kv[i].(string))
		} else {
			c[kv[i].(string)] = kv[i+1]
		}
	}
	tok := jwt.NewWithClaims(sg.method, c)
	if sg.kid != "" {
		tok.Header["kid"] = sg.kid
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

// hsMode is HS256 with a shared secret.
func hsMode(t *testing.T) (*auth.Verifier, signer) {
	t.Helper()
	v, err := auth.NewVerifier(auth.Config{Algorithm: "HS256", Secret: testJWTSecret, Audience: testJWTAudience, ClockSkew: 30 * time.Second})
	require.NoError(t, err)
	return v, signer{method: jwt.SigningMethodHS256, key: []byte(testJWTSecret), wrong: []byte("not-the-secret-not-the-secret-xx")}
}

var (
	testRSAKey      = sync.OnceValue(func() *rsa.PrivateKey { k, _ := rsa.GenerateKey(rand.Reader, 2048); return k })
	testRSAKeyOther = sync.OnceValue(func() *rsa.PrivateKey { k, _ := rsa.GenerateKey(rand.Reader, 2048); return k })
)

// jwksMode is JWT_ALGORITHM=auto with a JWKS served by a local server.
func jwksMode(t *testing.T) (*auth.Verifier, signer) {
	t.Helper()
	k := testRSAKey()
	enc := base64.RawURLEncoding.EncodeToString
	doc, err := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256", "n": enc(k.N.Bytes()), "e": enc(big.NewInt(int64(k.E)).Bytes()),
	}}})
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(doc) }))
	t.Cleanup(srv.Close)
	v, err := auth.NewVerifier(auth.Config{Algorithm: "auto", JWKSURL: srv.URL, Audience: testJWTAudience, Logger: testLogger(t)})
	require.NoError(t, err)
	return v, signer{method: jwt.SigningMethodRS256, key: k, wrong: testRSAKeyOther(), kid: "k1"}
}

// noDBServer serves the real router with authentication but no database: only for
// requests that authentication refuses, or handlers that need no broker.
func noDBServer(t *testing.T, opts Options) *testBundle {
	t.Helper()
	srv := httptest.NewServer(New(opts, nil, testLogger(t)).Handler())
	t.Cleanup(srv.Close)
	return &testBundle{srv: srv}
}

func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

// requireUnauthenticated checks a 401: JSON body, code, the challenge header, and no
// trace of the token in the answer.
func requireUnauthenticated(t *testing.T, r response, msg, token string) {
	t.Helper()
	requireError(t, r, http.StatusUnauthorized, "unauthenticated", msg, "")
	require.True(t, strings.HasPrefix(r.header.Get("WWW-Authenticate"), `Bearer realm="queen"`), r.header.Get("WWW-Authenticate"))
	requireNoEcho(t, r, token)
}

func requireForbidden(t *testing.T, r response, token string) {
	t.Helper()
	requireError(t, r, http.StatusForbidden, "forbidden", auth.MsgInsufficientRole, "")
	require.Equal(t, `Bearer realm="queen", error="insufficient_scope"`, r.header.Get("WWW-Authenticate"))
	requireNoEcho(t, r, token)
}

// requireNoEcho: nothing of the token (any of its three segments) is in the answer.
func requireNoEcho(t *testing.T, r response, token string) {
	t.Helper()
	if token == "" {
		return
	}
	all := string(r.body) + fmt.Sprint(r.header)
	for _, seg := range strings.Split(token, ".") {
		if len(seg) >= 8 {
			require.NotContains(t, all, seg)
		}
	}
}

// TestEveryRouteHasALevel walks the router: a route registered without a row in
// routeLevels fails here (and would be admin-only at run time).
func TestEveryRouteHasALevel(t *testing.T) {
	t.Parallel()
	s := New(Options{}, nil, nil)
	var routes []string
	require.NoError(t, chi.Walk(s.router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routes = append(routes, method+" "+route)
		return nil
	}))
	require.NotEmpty(t, routes)
	for _, rt := range routes {
		_, ok := routeLevels[rt]
		require.True(t, ok, "route %q has no access level: add it to routeLevels in auth_routes.go", rt)
	}
}

// TestRouteLevelsFollowTheSpec pins routeLevels to the Auth column of the upstream
// route list, written out independently here.
func TestRouteLevelsFollowTheSpec(t *testing.T) {
	t.Parallel()
	spec := map[auth.Level][]string{
		auth.Public:    {"GET /health", "GET /metrics", "GET /metrics/prometheus", "GET /", "GET /assets/*", "GET /*"},
		auth.WriteOnly: {"POST /api/v1/push", "POST /api/v1/timers"},
		auth.ReadWrite: {
			"POST /api/v1/configure", "GET /api/v1/pop/queue/{queue}",
			"GET /api/v1/pop/queue/{queue}/partition/{partition}", "GET /api/v1/pop", "POST /api/v1/ack",
			"POST /api/v1/ack/batch", "POST /api/v1/transaction", "POST /api/v1/lease/{leaseId}/extend",
			"DELETE /api/v1/messages/{partitionId}/{transactionId}", "POST /api/v1/traces",
			"POST /api/v1/consumer-groups/{group}/subscription", "POST /api/v1/consumer-groups/{group}/queues/{queue}/seek",
			"POST /api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek",
			"POST /streams/v1/queries", "POST /streams/v1/cycle",
		},
		auth.ReadOnly: {
			"GET /api/v1/resources/overview", "GET /api/v1/resources/queues", "GET /api/v1/resources/queues/{queue}",
			"GET /api/v1/resources/namespaces", "GET /api/v1/resources/tasks", "GET /api/v1/resources/partitions",
			"GET /api/v1/messages", "GET /api/v1/messages/{partitionId}/{transactionId}", "GET /api/v1/dlq",
			"GET /api/v1/traces/{partitionId}/{transactionId}", "GET /api/v1/traces/by-name/{traceName}",
			"GET /api/v1/traces/names", "GET /api/v1/status", "GET /api/v1/status/queues",
			"GET /api/v1/status/queues/{queue}", "GET /api/v1/status/queues/{queue}/messages",
			"GET /api/v1/status/analytics", "GET /api/v1/status/buffers", "GET /api/v1/analytics/system-metrics",
			"GET /api/v1/analytics/worker-metrics", "GET /api/v1/analytics/queue-lag", "GET /api/v1/analytics/queue-ops",
			"GET /api/v1/analytics/queue-parked-replicas", "GET /api/v1/analytics/retention",
			"GET /api/v1/analytics/postgres-stats", "GET /api/v1/consumer-groups", "GET /api/v1/consumer-groups/lagging",
			"GET /api/v1/consumer-groups/{group}", "POST /streams/v1/state/get",
		},
		auth.Admin: {
			"GET /api/v1/system/maintenance", "POST /api/v1/system/maintenance", "GET /api/v1/system/maintenance/pop",
			"POST /api/v1/system/maintenance/pop", "GET /api/v1/system/shared-state",
			"DELETE /api/v1/resources/queues/{queue}", "POST /api/v1/stats/refresh",
			"DELETE /api/v1/consumer-groups/{group}", "DELETE /api/v1/consumer-groups/{group}/queues/{queue}",
			"POST /api/v1/migration/test-connection", "POST /api/v1/migration/start", "GET /api/v1/migration/status",
			"POST /api/v1/migration/validate", "POST /api/v1/migration/reset",
			"POST /internal/api/notify", "GET /internal/api/shared-state/stats", "GET /internal/api/inter-instance/stats",
		},
	}
	for level, routes := range spec {
		for _, rt := range routes {
			method, pattern, _ := strings.Cut(rt, " ")
			require.Equal(t, level, routeLevel(method, pattern), rt)
		}
	}
	require.Len(t, spec[auth.Admin], 17, "the upstream route list counts 17 admin routes")
	// queen's own analytics view is read-only, as the others.
	require.Equal(t, auth.ReadOnly, routeLevel(http.MethodGet, "/api/v1/analytics/consumer-lag"))
	// Everything under /api/v1/system/ and /internal/ is admin, listed or not, queen's
	// replicas and long-poll views included.
	for rt, level := range routeLevels {
		if strings.Contains(rt, " /api/v1/system/") || strings.Contains(rt, " /internal/") {
			require.Equal(t, auth.Admin, level, rt)
		}
	}
	require.Equal(t, auth.Admin, routeLevel("GET", "/api/v1/not-listed-anywhere"), "unlisted routes are admin-only")
}

// TestRouteClassMatrix is the authorization table: every route class × {no token, bad
// signature, expired, wrong audience, read-only, read-write, admin}, in HS256 mode and
// in auto mode with a JWKS, against a real broker and database.
func TestRouteClassMatrix(t *testing.T) {
	t.Parallel()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(st.Close)

	type route struct{ method, path, body string }
	classes := []struct {
		name  string
		level auth.Level
		route route
	}{
		{"Public", auth.Public, route{http.MethodGet, "/metrics", ""}},
		{"ReadOnly", auth.ReadOnly, route{http.MethodGet, "/api/v1/resources/queues", ""}},
		{"SystemView", auth.Admin, route{http.MethodGet, "/api/v1/system/replicas", ""}},
		{"WriteOnly", auth.WriteOnly, route{http.MethodPost, "/api/v1/push", `{"items":[{"queue":"matrix","payload":{"n":1}}]}`}},
		{"ReadWrite", auth.ReadWrite, route{http.MethodPost, "/api/v1/configure", `{"queue":"matrix"}`}},
		{"Admin", auth.Admin, route{http.MethodGet, "/api/v1/system/maintenance", ""}},
		{"Whoami", auth.ReadOnly, route{http.MethodGet, "/api/v1/auth/whoami", ""}},
		{"DLQRequeue", auth.ReadWrite, route{http.MethodPost, "/api/v1/dlq/requeue", `{"filter":{"queue":"matrix"}}`}},
		{"DLQPurge", auth.Admin, route{http.MethodDelete, "/api/v1/dlq?queue=matrix", ""}},
	}
	for _, mode := range []struct {
		name string
		new  func(*testing.T) (*auth.Verifier, signer)
	}{{"HS256", hsMode}, {"AutoJWKS", jwksMode}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			v, sg := mode.new(t)
			b := start(t, Options{Verifier: v}, st)
			cases := []struct {
				name  string
				token func() string
				level auth.Level // granted; -1 = refused with msg
				msg   string
			}{
				{"NoToken", func() string { return "" }, -1, auth.MsgAuthRequired},
				{"BadSignature", func() string { return sg.sign(t, sg.wrong, "mallory", "admin") }, -1, auth.MsgBadSignature},
				{"Expired", func() string {
					return sg.token(t, "alice", "admin", "exp", time.Now().Add(-time.Hour).Unix(), "iat", time.Now().Add(-2*time.Hour).Unix())
				}, -1, auth.MsgExpired},
				{"WrongAudience", func() string { return sg.token(t, "alice", "admin", "aud", "billing") }, -1, auth.MsgBadAudience},
				{"ReadOnlyRole", func() string { return sg.token(t, "alice", "read-only") }, auth.ReadOnly, ""},
				{"WriteOnlyRole", func() string { return sg.token(t, "alice", "write-only") }, auth.WriteOnly, ""},
				{"ReadWriteRole", func() string { return sg.token(t, "alice", "read-write") }, auth.ReadWrite, ""},
				{"AdminRole", func() string { return sg.token(t, "alice", "admin") }, auth.Admin, ""},
			}
			for _, cl := range classes {
				for _, tc := range cases {
					t.Run(cl.name+"/"+tc.name, func(t *testing.T) {
						t.Parallel()
						token := tc.token()
						var hdr []string
						if token != "" {
							hdr = bearer(token)
						}
						r := b.do(t, cl.route.method, cl.route.path, cl.route.body, hdr...)
						switch {
						case cl.level == auth.Public:
							require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
						case tc.level < 0:
							requireUnauthenticated(t, r, tc.msg, token)
						case !tc.level.Allows(cl.level):
							requireForbidden(t, r, token)
						default:
							require.True(t, r.status >= 200 && r.status < 300, "status %d body %s", r.status, r.body)
						}
					})
				}
			}
		})
	}
}

// TestEveryRouteEnforcesItsLevel sends every registered route a request without a
// token, with a token one level short, and with a token of exactly its level.
func TestEveryRouteEnforcesItsLevel(t *testing.T) {
	t.Parallel()
	v, sg := hsMode(t)
	b := setup(t, Options{Verifier: v})
	s := New(Options{}, nil, nil)
	param := regexp.MustCompile(`\{[^}]+\}|\*`)
	tokenFor := map[auth.Level]string{
		auth.None: sg.token(t, "u", "no-such-role"), auth.ReadOnly: sg.token(t, "u", "read-only"),
		auth.WriteOnly: sg.token(t, "u", "write-only"), auth.ReadWrite: sg.token(t, "u", "read-write"),
		auth.Admin: sg.token(t, "u", "admin"),
	}
	// The token one level short of each route level: none of these allows the level
	// (read-only and write-only do not include each other).
	short := map[auth.Level]auth.Level{auth.ReadOnly: auth.None, auth.WriteOnly: auth.ReadOnly,
		auth.ReadWrite: auth.WriteOnly, auth.Admin: auth.ReadWrite}
	require.NoError(t, chi.Walk(s.router, func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		level := routeLevel(method, pattern)
		path := param.ReplaceAllString(pattern, "authq")
		t.Run(method+" "+pattern, func(t *testing.T) {
			r := b.do(t, method, path, "")
			if level == auth.Public && method+" "+pattern == "GET /auth/me" {
				// Public, but it has no identity to tell with JWT on (compat_test.go).
				requireError(t, r, http.StatusUnauthorized, "auth_required", "auth_required", "")
				return
			}
			if level == auth.Public {
				require.NotContains(t, []int{401, 403}, r.status, "public route refused: %s", r.body)
				return
			}
			if method == http.MethodHead { // no body to read
				require.Equal(t, http.StatusUnauthorized, r.status)
				require.Equal(t, http.StatusForbidden, b.do(t, method, path, "", bearer(tokenFor[short[level]])...).status)
				require.Equal(t, http.StatusOK, b.do(t, method, path, "", bearer(tokenFor[level])...).status)
				return
			}
			requireUnauthenticated(t, r, auth.MsgAuthRequired, "")
			requireForbidden(t, b.do(t, method, path, "", bearer(tokenFor[short[level]])...), tokenFor[short[level]])
			r = b.do(t, method, path, "", bearer(tokenFor[level])...)
			require.NotContains(t, []int{401, 403}, r.status, "%s %s with a %s token: %s", method, path, level, r.body)
		})
		return nil
	}))
}

func TestAuthMiddleware(t *testing.T) {
	t.Parallel()
	v, sg := hsMode(t)
	admin := sg.token(t, "root", "admin")

	t.Run("RefusesBeforeReadingTheBody", func(t *testing.T) {
		t.Parallel()
		b := noDBServer(t, Options{Verifier: v, MaxBodyBytes: 16})
		requireUnauthenticated(t, b.post(t, "/api/v1/push", "{not json"), auth.MsgAuthRequired, "")
		requireUnauthenticated(t, b.post(t, "/api/v1/push", strings.Repeat("x", 64)), auth.MsgAuthRequired, "")
	})

	t.Run("PreflightAndPublicRoutesNeedNoToken", func(t *testing.T) {
		t.Parallel()
		b := noDBServer(t, Options{Verifier: v})
		requireStatus(t, http.StatusNoContent, b.do(t, http.MethodOptions, "/api/v1/push", ""))
		requireStatus(t, http.StatusOK, b.get(t, "/health/live"))
		requireStatus(t, http.StatusOK, b.do(t, http.MethodHead, "/health/live", ""))
		// A page of the dashboard's router: no token, its 404 without a dashboard.
		requireError(t, b.get(t, "/queues/orders"), http.StatusNotFound, "not_found", "Not found", "")
	})

	t.Run("UnknownRoutesNeedReadWrite", func(t *testing.T) {
		t.Parallel()
		b := noDBServer(t, Options{Verifier: v})
		ro, rw := sg.token(t, "reader", "read-only"), sg.token(t, "writer", "read-write")
		for _, rq := range []struct{ method, path string }{
			{http.MethodGet, "/api/v1/nothing-here"}, {http.MethodGet, "/api/v1/push"},
			{http.MethodPost, "/auth/nothing-here"}, {http.MethodPost, "/queues/orders"},
		} {
			requireUnauthenticated(t, b.do(t, rq.method, rq.path, ""), auth.MsgAuthRequired, "")
			requireForbidden(t, b.do(t, rq.method, rq.path, "", bearer(ro)...), ro)
			requireError(t, b.do(t, rq.method, rq.path, "", bearer(rw)...), http.StatusNotFound, "no_such_route", "Not Found", "")
		}
	})

	t.Run("UnknownRoutesUnderAdminPrefixesNeedAdmin", func(t *testing.T) {
		t.Parallel()
		b := noDBServer(t, Options{Verifier: v})
		rw, admin := sg.token(t, "writer", "read-write"), sg.token(t, "root", "admin")
		for _, rq := range []struct{ method, path, code, msg string }{
			{http.MethodGet, "/api/v1/system/nothing-here", "no_such_route", "Not Found"},
			{http.MethodPost, "/api/v1/system", "no_such_route", "Not Found"},
			{http.MethodPost, "/internal/nothing-here", "no_such_route", "Not Found"},
			{http.MethodGet, "/internal/nothing-here", "not_found", "Not found"}, // the dashboard's 404
		} {
			requireUnauthenticated(t, b.do(t, rq.method, rq.path, ""), auth.MsgAuthRequired, "")
			requireForbidden(t, b.do(t, rq.method, rq.path, "", bearer(rw)...), rw)
			requireError(t, b.do(t, rq.method, rq.path, "", bearer(admin)...), http.StatusNotFound, rq.code, rq.msg, "")
		}
		// Beside the prefixes, an unknown path still needs read-write only.
		requireError(t, b.do(t, http.MethodGet, "/api/v1/systemic", "", bearer(rw)...), http.StatusNotFound,
			"no_such_route", "Not Found", "")
	})

	t.Run("HeaderForms", func(t *testing.T) {
		t.Parallel()
		b := noDBServer(t, Options{Verifier: v})
		ro := sg.token(t, "reader", "read-only")
		// A read-only token on an admin route: each form reaches the role check (403),
		// which proves the token was found and verified.
		for _, h := range []string{"Bearer " + ro, "bearer " + ro, "BEARER " + ro, ro, "  Bearer   " + ro + "  "} {
			requireForbidden(t, b.do(t, http.MethodGet, "/api/v1/system/maintenance", "", "Authorization", h), ro)
		}
		for _, h := range []string{"Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Token " + ro} {
			r := b.do(t, http.MethodGet, "/api/v1/system/maintenance", "", "Authorization", h)
			require.Equal(t, http.StatusUnauthorized, r.status, "%q: %s", h, r.body)
		}
		r := b.do(t, http.MethodGet, "/api/v1/system/maintenance", "", "Authorization", "Bearer "+ro[:len(ro)-4]+"AAAA")
		requireUnauthenticated(t, r, auth.MsgBadSignature, ro)
		require.Equal(t, `Bearer realm="queen", error="invalid_token"`, r.header.Get("WWW-Authenticate"))
	})

	t.Run("TokenWithoutRoleIsForbiddenEvenOnReadOnly", func(t *testing.T) {
		t.Parallel()
		b := noDBServer(t, Options{Verifier: v})
		tok := sg.token(t, "nobody", "")
		requireForbidden(t, b.do(t, http.MethodGet, "/api/v1/resources/queues", "", bearer(tok)...), tok)
	})

	t.Run("UnlistedRouteIsAdminOnly", func(t *testing.T) {
		t.Parallel()
		s := New(Options{Verifier: v}, nil, testLogger(t))
		s.router.Get("/api/v1/brand-new", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
		srv := httptest.NewServer(s.Handler())
		t.Cleanup(srv.Close)
		b := &testBundle{srv: srv}
		rw := sg.token(t, "w", "read-write")
		requireForbidden(t, b.do(t, http.MethodGet, "/api/v1/brand-new", "", bearer(rw)...), rw)
		requireStatus(t, http.StatusTeapot, b.do(t, http.MethodGet, "/api/v1/brand-new", "", bearer(admin)...))
	})

	t.Run("SkipPaths", func(t *testing.T) {
		t.Parallel()
		s := New(Options{Verifier: v, AuthSkipPaths: []string{"/", "/api/v1/open", "/api/v1/zone/"}}, nil, testLogger(t))
		for _, p := range []string{"/api/v1/open", "/api/v1/open/x", "/api/v1/zone", "/api/v1/zone/a", "/api/v1/zone/a/b", "/api/v1/other/x"} {
			s.router.Get(p, func(w http.ResponseWriter, r *http.Request) {
				_, ok := auth.FromContext(r.Context())
				require.False(t, ok, "skip-listed requests carry no principal")
				w.WriteHeader(http.StatusNoContent)
			})
		}
		srv := httptest.NewServer(s.Handler())
		t.Cleanup(srv.Close)
		b := &testBundle{srv: srv}
		for path, open := range map[string]bool{
			"/api/v1/open":                true,  // exact entry
			"/api/v1/open/x":              false, // exact entries are not prefixes
			"/api/v1/zone":                false, // "/api/v1/zone/" is a prefix of its children only
			"/api/v1/zone/a":              true,
			"/api/v1/zone/a/b":            true,
			"/api/v1/other/x":             false,
			"/api/v1/zone%2F..%2Fother/x": false, // routes nowhere, and is not skipped into another route
		} {
			r := b.get(t, path)
			if open {
				requireStatus(t, http.StatusNoContent, r)
			} else {
				requireStatus(t, http.StatusUnauthorized, r)
			}
		}
		// The "/" entry exempts the root only, not everything below it.
		requireUnauthenticated(t, b.get(t, "/api/v1/resources/queues"), auth.MsgAuthRequired, "")
	})

	t.Run("JWKSDownIs503", func(t *testing.T) {
		t.Parallel()
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		jv, err := auth.NewVerifier(auth.Config{Algorithm: "RS256", JWKSURL: dead.URL, JWKSTimeout: time.Second, Logger: testLogger(t)})
		require.NoError(t, err)
		b := noDBServer(t, Options{Verifier: jv})
		tok := signer{method: jwt.SigningMethodRS256, key: testRSAKey(), kid: "k1"}.token(t, "a", "admin")
		r := b.do(t, http.MethodGet, "/api/v1/system/maintenance", "", bearer(tok)...)
		requireError(t, r, http.StatusServiceUnavailable, "unavailable", auth.MsgKeysUnavailable, "")
		require.Equal(t, "1", r.header.Get("Retry-After"))
	})
}

// TestAuthOffNeverLooksAtTheHeader: with JWT_ENABLED=false nothing is refused, a
// garbage Authorization header included, and nothing is stamped.
func TestAuthOffNeverLooksAtTheHeader(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	r := b.do(t, http.MethodPost, "/api/v1/push",
		`{"items":[{"queue":"authoff","payload":1,"producerSub":"attacker-no-jwt"}]}`, "Authorization", "Bearer garbage")
	requireStatus(t, http.StatusCreated, r)
	requireStatus(t, http.StatusOK, b.do(t, http.MethodGet, "/api/v1/system/maintenance", "", "Authorization", "Bearer garbage"))
	m := b.popOne(t, "authoff", "autoAck=true")
	require.Nil(t, m["messages"].([]any)[0].(map[string]any)["producerSub"])
}

// TestProducerSubIsStampedFromTheToken: the verified sub is stored on /push and inside
// /transaction; a producerSub in the body never is.
func TestProducerSubIsStampedFromTheToken(t *testing.T) {
	t.Parallel()
	v, sg := hsMode(t)
	b := setup(t, Options{Verifier: v, AuthSkipPaths: []string{"/api/v1/push"}})
	legit := sg.token(t, "legit", "read-write", "username", "not-this", "id", "nor-this")
	noSub := sg.token(t, "", "read-write", "sub", nil)

	popSubs := func(t *testing.T, q string) []any {
		t.Helper()
		r := b.do(t, http.MethodGet, "/api/v1/pop/queue/"+q+"?autoAck=true&batch=10", "", bearer(legit)...)
		requireStatus(t, http.StatusOK, r)
		var subs []any
		for _, m := range r.object(t)["messages"].([]any) {
			subs = append(subs, m.(map[string]any)["producerSub"])
		}
		return subs
	}

	t.Run("Transaction", func(t *testing.T) {
		t.Parallel()
		body := `{"operations":[
			{"type":"push","items":[{"queue":"stamp-tx","payload":1,"producerSub":"attacker"}]},
			{"type":"push","queue":"stamp-tx","payload":2,"producerSub":"attacker"}]}`
		r := b.do(t, http.MethodPost, "/api/v1/transaction", body, bearer(legit)...)
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, true, r.object(t)["success"], "body: %s", r.body)
		require.Equal(t, []any{"legit", "legit"}, popSubs(t, "stamp-tx"))
	})

	t.Run("TokenWithoutSubStampsNothing", func(t *testing.T) {
		t.Parallel()
		// /push is skip-listed in this server, so use a transaction to carry the token.
		body := `{"operations":[{"type":"push","queue":"stamp-nosub","payload":1,"producerSub":"attacker"}]}`
		requireStatus(t, http.StatusOK, b.do(t, http.MethodPost, "/api/v1/transaction", body, bearer(noSub)...))
		require.Equal(t, []any{nil}, popSubs(t, "stamp-nosub"))
	})

	t.Run("SkipListedPushStampsNothing", func(t *testing.T) {
		t.Parallel()
		body := `{"items":[{"queue":"stamp-skip","payload":1,"producerSub":"attacker"}]}`
		requireStatus(t, http.StatusCreated, b.do(t, http.MethodPost, "/api/v1/push", body, bearer(legit)...))
		require.Equal(t, []any{nil}, popSubs(t, "stamp-skip"))
	})

	t.Run("Push", func(t *testing.T) {
		t.Parallel()
		pb := setup(t, Options{Verifier: v})
		body := `{"items":[{"queue":"stamp","payload":1,"producerSub":"attacker"},{"queue":"stamp","payload":2}]}`
		requireStatus(t, http.StatusCreated, pb.do(t, http.MethodPost, "/api/v1/push", body, bearer(legit)...))
		r := pb.do(t, http.MethodGet, "/api/v1/pop/queue/stamp?autoAck=true&batch=10", "", bearer(legit)...)
		requireStatus(t, http.StatusOK, r)
		var subs []any
		for _, m := range r.object(t)["messages"].([]any) {
			subs = append(subs, m.(map[string]any)["producerSub"])
		}
		require.Equal(t, []any{"legit", "legit"}, subs)
		// The message list shows it too.
		r = pb.do(t, http.MethodGet, "/api/v1/messages?queue=stamp", "", bearer(legit)...)
		requireStatus(t, http.StatusOK, r)
		require.Contains(t, string(r.body), `"producerSub":"legit"`)
	})
}

// TestTokensAreNeverLogged runs accepted and refused requests through a server whose
// log is captured at Debug, and looks for the tokens in it.
func TestTokensAreNeverLogged(t *testing.T) {
	t.Parallel()
	v, sg := hsMode(t)
	var logs testlog.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := httptest.NewServer(New(Options{Verifier: v}, broker.New(broker.DefaultConfig(), nil, logger), logger).Handler())
	t.Cleanup(srv.Close)
	b := &testBundle{srv: srv}
	tokens := []string{
		sg.token(t, "alice", "read-only"),                                     // 403 on an admin route
		sg.sign(t, sg.wrong, "mallory", "admin"),                              // bad signature
		sg.token(t, "old", "admin", "exp", time.Now().Add(-time.Hour).Unix()), // expired
		"not.a.jwt-but-secret-looking-value",
	}
	for _, tok := range tokens {
		b.do(t, http.MethodGet, "/api/v1/system/maintenance", "", bearer(tok)...)
		b.do(t, http.MethodPost, "/api/v1/push", "{bad", bearer(tok)...)
	}
	b.do(t, http.MethodGet, "/health/live", "", bearer(tokens[0])...)
	logged := logs.String()
	require.Contains(t, logged, "request rejected", "the refusals are logged (without tokens)")
	require.Contains(t, logged, `"route":"/api/v1/system/maintenance","status":403`, "refusals keep their route in the access log")
	for _, tok := range tokens {
		for _, seg := range slices.DeleteFunc(strings.Split(tok, "."), func(s string) bool { return len(s) < 8 }) {
			require.NotContains(t, logged, seg)
		}
	}
}

// TestWriteOnlyTokenWalksTheRouteTable: a token with only the Queen 1.x write-only
// role pushes (2xx), and gets 403 "Insufficient permissions" on every other protected
// route the router serves, walked from the router rather than listed by hand.
func TestWriteOnlyTokenWalksTheRouteTable(t *testing.T) {
	t.Parallel()
	v, sg := hsMode(t)
	b := setup(t, Options{Verifier: v})
	token := sg.token(t, "producer", "write-only")
	r := b.do(t, http.MethodPost, "/api/v1/push", `{"items":[{"queue":"wo-walk","payload":{"n":1}}]}`, bearer(token)...)
	require.True(t, r.status >= 200 && r.status < 300, "push with a write-only token: %d %s", r.status, r.body)
	// The same token in the roles array, next to an unknown role, is the same set.
	arrayToken := sg.token(t, "producer", "", "roles", []any{"viewer", "write-only"})
	r = b.do(t, http.MethodPost, "/api/v1/push", `{"items":[{"queue":"wo-walk","payload":{"n":2}}]}`, bearer(arrayToken)...)
	require.True(t, r.status >= 200 && r.status < 300, "push with roles [viewer write-only]: %d %s", r.status, r.body)

	s := New(Options{}, nil, nil)
	param := regexp.MustCompile(`\{[^}]+\}|\*`)
	var writeOnly, refused int
	require.NoError(t, chi.Walk(s.router, func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		level := routeLevel(method, pattern)
		if level == auth.Public {
			return nil
		}
		path := param.ReplaceAllString(pattern, "woq")
		t.Run(method+" "+pattern, func(t *testing.T) {
			r := b.do(t, method, path, "", bearer(token)...)
			if level == auth.WriteOnly {
				require.NotContains(t, []int{401, 403}, r.status, "write-only route refused: %s", r.body)
				return
			}
			if method == http.MethodHead { // no body to read
				require.Equal(t, http.StatusForbidden, r.status)
				return
			}
			requireForbidden(t, r, token)
		})
		if level == auth.WriteOnly {
			writeOnly++
		} else {
			refused++
		}
		return nil
	}))
	require.Positive(t, writeOnly, "the push route is registered and write-only")
	require.Greater(t, refused, 20, "pop, ack, messages, DLQ, traces and the listings are walked")
}

// TestReadOnlyAndWriteOnlyRolesCombine: roles are a set. A token with both the
// read-only and the write-only role may push and read, but not consume: neither role
// passes a read-write route.
func TestReadOnlyAndWriteOnlyRolesCombine(t *testing.T) {
	t.Parallel()
	v, sg := hsMode(t)
	b := setup(t, Options{Verifier: v})
	token := sg.token(t, "both", "", "roles", []any{"read-only", "write-only"})
	r := b.do(t, http.MethodPost, "/api/v1/push", `{"items":[{"queue":"ro-wo","payload":{"n":1}}]}`, bearer(token)...)
	require.True(t, r.status >= 200 && r.status < 300, "push: %d %s", r.status, r.body)
	r = b.do(t, http.MethodGet, "/api/v1/resources/queues", "", bearer(token)...)
	require.Equal(t, http.StatusOK, r.status, r.body)
	requireForbidden(t, b.do(t, http.MethodGet, "/api/v1/pop/queue/ro-wo", "", bearer(token)...), token)
	requireForbidden(t, b.do(t, http.MethodPost, "/api/v1/ack", `{"transactionId":"x","partitionId":"y","status":"completed"}`, bearer(token)...), token)
}
