package browsertest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
)

const jwtSecret = "browser-test-secret-of-32-bytes!"

// token signs an HS256 token for sub with role ("" for none), expiring after ttl.
func token(t *testing.T, sub, role string, ttl time.Duration) string {
	t.Helper()
	claims := jwt.MapClaims{"sub": sub, "iat": time.Now().Add(-2 * time.Hour).Unix(), "exp": time.Now().Add(ttl).Unix()}
	if role != "" {
		claims["role"] = role
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(jwtSecret))
	require.NoError(t, err)
	return s
}

// startSeededJWT starts a seeded broker with JWT authentication on (HS256 with
// jwtSecret; env adds to its settings) and returns it with a client holding an admin
// token (sub alice-admin).
func startSeededJWT(t *testing.T, env ...string) (*daemontest.Server, *client) {
	t.Helper()
	srv := daemontest.Start(t, daemontest.Options{Env: append([]string{"QUEEN_INSTANCE=e2e-jwt", "JWT_ENABLED=true",
		"JWT_ALGORITHM=HS256", "JWT_SECRET=" + jwtSecret, "QUEEN_ANALYTICS_BUCKET=" + analyticsBucket.String()}, env...)})
	c := newClient(srv.URL, token(t, "alice-admin", "admin", time.Hour))
	seed(t, srv, c)
	return srv, c
}

// expiry is tok's exp claim (Unix seconds), read without checking the signature.
func expiry(t *testing.T, tok string) int64 {
	t.Helper()
	parsed, _, err := jwt.NewParser().ParseUnverified(tok, jwt.MapClaims{})
	require.NoError(t, err)
	exp, err := parsed.Claims.GetExpirationTime()
	require.NoError(t, err)
	require.NotNil(t, exp)
	return exp.Unix()
}

// connect pastes tok into the Connect screen (remembered or not) and submits it.
func (tb *tab) connect(tok string, remember bool) {
	tb.t.Helper()
	tb.waitJS("the Connect screen", `qt.has('[data-testid="connect-screen"]')`)
	tb.fill(`[data-testid="connect-token"]`, tok)
	if remember {
		tb.click(`[data-testid="connect-remember"]`)
	}
	tb.click(`[data-testid="connect-submit"]`)
}

// stored is the token the tab keeps: "session", "local" or "".
func (tb *tab) stored() string {
	return eval[string](tb, `sessionStorage.getItem('queen.token') ? 'session' : localStorage.getItem('queen.token') ? 'local' : ''`)
}

// TestAuth: the dashboard of a broker with JWT authentication on (HS256), with tokens
// of every level and refused tokens (behind queen-proxy: TestBehindQueenProxy).
func TestAuth(t *testing.T) {
	t.Parallel()
	browser(t)
	srv, c := startSeededJWT(t)
	admin := c.token

	t.Run("NoTokenShowsConnect", func(t *testing.T) {
		t.Parallel()
		tb := newTab(t, srv.URL)
		tb.open("/")
		tb.waitJS("the Connect screen", `qt.has('[data-testid="connect-screen"]')`)
		tb.waitIdle()
		for _, r := range tb.mon.requests() {
			require.False(t, strings.HasPrefix(r.path, "/api/"), "no API call before a token: %s %s", r.method, r.url)
		}
		tb.clean("the Connect screen")
		tb.screenshot("connect")
	})

	t.Run("AdminSession", func(t *testing.T) {
		t.Parallel()
		tb := newTab(t, srv.URL)
		tb.open("/")
		tb.connect(admin, false)
		tb.waitJS("the dashboard with data", `qt.ready('dashboard') && qt.num('stat-queues') >= 2 && !!qt.row('table-top-queues', 'e2e.orders')`)
		require.Equal(t, "alice-admin", tb.text(`[data-testid="who-sub"]`))
		require.Equal(t, "admin", tb.text(`[data-testid="who-level"]`))
		// The token's expiry, as the browser's clock reads it (the sidebar's "expires 14:05").
		want := eval[string](tb, fmt.Sprintf(`(() => { const d = new Date(%d * 1000);
			return 'expires ' + String(d.getHours()).padStart(2, '0') + ':' + String(d.getMinutes()).padStart(2, '0'); })()`, expiry(t, admin)))
		require.Equal(t, want, tb.text(`[data-testid="who-exp"]`))
		tb.waitJS("the maintenance toggles", `qt.has('[data-testid="toggle-push-maintenance"]')`)
		tb.waitIdle()
		api := 0
		for _, r := range tb.mon.requests() {
			if strings.HasPrefix(r.path, "/api/") {
				api++
				require.Equal(t, "Bearer "+admin, r.auth, "%s %s carries the bearer", r.method, r.path)
			} else {
				require.Empty(t, r.auth, "%s %s carries no token", r.method, r.path)
			}
		}
		require.Greater(t, api, 5)
		tb.clean("the admin's dashboard")
		require.Equal(t, "session", tb.stored())

		tb.reload()
		tb.waitJS("the dashboard again after a reload", `qt.ready('dashboard') && qt.num('stat-queues') >= 2`)
		tb.clean("the reload")
		other := tb.sibling()
		other.open("/queues")
		other.waitJS("a new tab needs the token again", `qt.has('[data-testid="connect-screen"]')`)
		other.clean("the new tab")

		tb.click(`[data-testid="sign-out"]`)
		tb.waitJS("the Connect screen after sign-out", `qt.has('[data-testid="connect-screen"]')`)
		require.Empty(t, tb.stored(), "sign-out clears the storage")
		tb.connect(admin, true)
		tb.waitJS("the dashboard", `qt.ready('dashboard') && qt.num('stat-queues') >= 2`)
		require.Equal(t, "local", tb.stored())
		other.open("/queues")
		other.waitJS("with remember a new tab is signed in", `qt.ready('queues') && !!qt.row('table-queues', 'e2e.orders')`)
		other.clean("the remembered tab")
		tb.click(`[data-testid="sign-out"]`)
		tb.waitJS("the Connect screen after sign-out", `qt.has('[data-testid="connect-screen"]')`)
		require.Empty(t, tb.stored(), "sign-out clears the remembered token")
		tb.clean("the remembered session")
	})

	t.Run("ExpiryWarning", func(t *testing.T) {
		t.Parallel()
		tb := newTab(t, srv.URL)
		tb.open("/queues")
		tb.connect(token(t, "soon", "read-only", 5*time.Minute), false)
		tb.waitJS("the queues with a warning", `qt.ready('queues') && qt.text('[data-testid="banner-token-expiry"]').includes('expires in')`)
		tb.clean("the expiry warning")
	})

	t.Run("ReadOnly", func(t *testing.T) {
		t.Parallel()
		tb := newTab(t, srv.URL)
		tb.open("/")
		tb.connect(token(t, "rita-ro", "read-only", time.Hour), false)
		tb.waitJS("the dashboard", `qt.ready('dashboard') && qt.num('stat-queues') >= 2`)
		require.Equal(t, "read-only", tb.text(`[data-testid="who-level"]`))
		require.False(t, eval[bool](tb, `qt.has('[data-testid="toggle-push-maintenance"]')`), "no maintenance toggles below admin")
		for _, p := range []struct{ path, id, ready string }{
			{"/operations", "operations", `qt.rows('table-workers') >= 1`},
			{"/queues", "queues", `!!qt.row('table-queues', 'e2e.orders')`},
			{"/queues/e2e.orders", "queue", `qt.num('stat-total') === 30`},
			{"/consumers", "consumers", `!!qt.row('table-consumers', 'billing|e2e.orders')`},
			{"/messages?queue=e2e.orders", "messages", `qt.rows('table-messages') === 30`},
			{"/dlq", "dlq", `qt.rows('table-dlq') === 5`},
			{"/traces?name=e2e-trace", "traces", `qt.text('[data-testid="table-traces"]').includes('hello-e2e')`},
			{"/analytics", "analytics", `qt.num('stat-total') >= 30`},
			{"/system", "system", `qt.rows('table-servers') >= 1`},
		} {
			tb.open(p.path)
			tb.waitJS(p.path+" as read-only", `qt.ready('`+p.id+`') && (`+p.ready+`)`)
			switch p.id {
			case "queues":
				requireDisabled(t, tb, `[data-testid="queue-delete"]`)
			case "queue":
				requireDisabled(t, tb, `[data-testid="queue-delete"]`)
			case "consumers":
				requireDisabled(t, tb, `[data-testid="group-move-now"]`, `[data-testid="group-seek"]`, `[data-testid="group-delete"]`)
			case "dlq":
				requireDisabled(t, tb, `[data-testid="dlq-purge"]`, `[data-testid="dlq-requeue"]`, `[data-testid="dlq-purge-all"]`)
			case "system":
				// The replicas and the pops waiting are admin views: not asked for.
				tb.waitJS("the admin-only cards", `qt.text('[data-testid="card-replicas"]').includes('admin tokens only')
					&& qt.text('[data-testid="card-system-longpolls"]').includes('admin tokens only')`)
			}
			tb.clean(p.path + " as read-only") // no allowance: not one 403
		}
		tb.open("/messages?queue=e2e.orders")
		tb.waitJS("the messages", `qt.rows('table-messages') === 30`)
		tb.click(`[data-testid="table-messages"] tr[data-testid="row"] [data-testid="message-tx"]`)
		tb.waitJS("the message drawer", `qt.has('[data-testid="message-drawer"] [data-testid="message-delete"]')`)
		requireDisabled(t, tb, `[data-testid="message-delete"]`)
		tb.clean("the drawer as read-only")
	})

	t.Run("ReadWrite", func(t *testing.T) {
		t.Parallel()
		tb := newTab(t, srv.URL)
		tb.open("/consumers")
		tb.connect(token(t, "wes-rw", "read-write", time.Hour), false)
		row := `[data-testid="table-consumers"] tr[data-key="billing|e2e.orders"]`
		tb.waitJS("the billing row", `qt.ready('consumers') && qt.has('`+row+`')`)
		requireDisabled(t, tb, row+` [data-testid="group-delete"]`)
		tb.click(row + ` [data-testid="group-move-now"]`)
		tb.accept()
		tb.waitToast("ok", "moved to now")
		for _, g := range callJSON[[]obj](t, c, "GET", "/api/v1/consumer-groups", nil, http.StatusOK) {
			if g["name"] == "billing" {
				require.Equal(t, 0.0, g["totalLag"], "the read-write seek moved billing")
			}
		}
		tb.open("/queues")
		tb.waitJS("the queues", `qt.ready('queues') && !!qt.row('table-queues', 'e2e.orders')`)
		requireDisabled(t, tb, `[data-testid="queue-delete"]`)
		require.False(t, eval[bool](tb, `qt.has('[data-testid="toggle-pop-maintenance"]')`))
		tb.clean("read-write")
	})

	// An expired token, and an admin token signed with another key: each is refused and
	// forgotten (remembered or not), with the broker's message on the Connect screen.
	foreign, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "elsewhere", "role": "admin",
		"exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte("another-secret-of-thirty-two-bytes"))
	require.NoError(t, err)
	for _, rc := range []struct {
		name, token string
		remember    bool
		says        string
	}{
		{"ExpiredToken", token(t, "old", "admin", -time.Hour), false, "expired"},
		{"ForeignToken", foreign, true, "signature"},
	} {
		t.Run(rc.name, func(t *testing.T) {
			t.Parallel()
			tb := newTab(t, srv.URL)
			tb.open("/")
			tb.connect(rc.token, rc.remember)
			tb.waitJS("back on Connect with the broker's message", `qt.has('[data-testid="connect-screen"] [data-testid="connect-error"]')`)
			require.Contains(t, strings.ToLower(tb.text(`[data-testid="connect-error"]`)), rc.says)
			require.Empty(t, tb.stored(), "the refused token is forgotten")
			refused := 0
			tb.clean("the refused token", func(r request) bool {
				refused++
				return r.status == 401 && refused == 1
			})
		})
	}

	t.Run("NoRole", func(t *testing.T) {
		t.Parallel()
		tb := newTab(t, srv.URL)
		tb.open("/")
		tb.connect(token(t, "nobody", "", time.Hour), false)
		tb.waitJS("the no-role notice", `qt.has('[data-testid="no-role"]')`)
		require.Equal(t, "session", tb.stored())
		forbidden := 0
		tb.clean("the no-role notice", func(r request) bool {
			forbidden++
			return r.status == 403 && forbidden == 1
		})
		tb.click(`[data-testid="no-role"] [data-testid="sign-out"]`)
		tb.waitJS("the Connect screen", `qt.has('[data-testid="connect-screen"]')`)
		require.Empty(t, tb.stored(), "sign-out clears the storage")
		tb.clean("sign-out")
	})
}

// requireDisabled requires every element matching each selector to be a disabled
// control, with at least one match.
func requireDisabled(t *testing.T, tb *tab, sels ...string) {
	t.Helper()
	for _, sel := range sels {
		n := eval[int](tb, `document.querySelectorAll(`+jsString(sel)+`).length`)
		require.Positive(t, n, "%s is shown", sel)
		enabled := eval[int](tb, `[...document.querySelectorAll(`+jsString(sel)+`)].filter((e) => !e.disabled).length`)
		require.Zero(t, enabled, "%s is disabled", sel)
	}
}
