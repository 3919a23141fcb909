package browsertest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// TestBehindQueenProxy runs the dashboard through a real queen-proxy with login on. A
// deep link without a session goes to the proxy's sign-in page; signed in, the page
// comes back (the proxy forwards the dashboard's deep links), knows it runs behind the
// proxy, shows the user with Log out, takes its level from the proxy's GET /api/me (a
// read-only operator: actions disabled, not one 403), and shows the proxy's health as
// healthy; Log out ends the session (its cookie is refused afterwards) and returns to
// the sign-in page.
func TestBehindQueenProxy(t *testing.T) {
	t.Parallel()
	browser(t)
	srv, _, _ := startSeeded(t, "QUEEN_TENANCY_HEADER="+proxytest.TenancyHeader)
	p := proxytest.Start(t, proxytest.Options{Backends: []string{srv.URL}, Login: true})
	p.WaitBackends(t, "up", 10*time.Second)
	require.Equal(t, http.StatusCreated, p.Admin(t, http.MethodPost, "/admin/v1/users",
		map[string]any{"username": "ops", "password": "ops-password-1", "role": "read-only"}, nil))

	tb := newTab(t, p.URL)
	tb.do("open /queues", chromedp.Navigate(p.URL+"/queues"))
	tb.waitJS("the proxy's sign-in page", `location.pathname === '/login' && !!document.querySelector('#username')`)
	tb.fill("#username", "ops")
	tb.fill("#password", "ops-password-1")
	tb.click(`button[type="submit"]`)
	// The form posts and the proxy redirects back: wait out the navigation first.
	tb.do("the dashboard mounts after the sign-in", chromedp.WaitVisible(chromedp.CSS(`[data-testid="app-root"] > *`)))
	tb.waitJS("the queues page, signed in", `location.pathname === '/queues' && !!window.qt && qt.ready('queues')
		&& qt.has('[data-testid="queue-delete"]')`)
	require.Equal(t, "ops", tb.text(`[data-testid="who-user"]`))
	requireDisabled(t, tb, `[data-testid="queue-delete"]`)
	tb.waitJS("the proxy's health", `document.querySelector('[data-testid="health-dot"]').dataset.status === 'healthy'`)
	tb.clean("the queues page through queen-proxy")

	tb.open("/dlq")
	tb.waitJS("the dead letters", `qt.ready('dlq') && qt.rows('table-dlq') === 5`)
	requireDisabled(t, tb, `[data-testid="dlq-purge"]`)
	tb.clean("the dlq page through queen-proxy")

	// The session cookie (httpOnly: read over DevTools) works until Log out.
	session := tb.sessionCookie(p.URL)
	me := func() int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, p.URL+"/api/me", nil)
		require.NoError(t, err)
		req.AddCookie(&http.Cookie{Name: "token", Value: session})
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, me(), "the session works before Log out")

	tb.click(`[data-testid="logout"]`)
	tb.do("the sign-in page again", chromedp.WaitVisible(chromedp.CSS(`#username`)))
	require.Equal(t, "/login", eval[string](tb, `location.pathname`))
	require.Equal(t, http.StatusUnauthorized, me(), "Log out ended the session itself, not only the page")
}

// TestBehindQueenProxyBrokerJWT runs the dashboard through queen-proxy in front of a
// broker that verifies JWTs, the proxy signing the broker's tokens itself
// (QUEEN_PROXY_BROKER_AUTH=jwt). An admin operator signed in at the proxy gets the
// dashboard with no Connect screen (the proxy holds the credentials), sees the broker's
// data, and deletes a queue from the queues page: every request rides on a token the
// proxy minted, as the session cookie opens nothing at the broker, and not one fails.
func TestBehindQueenProxyBrokerJWT(t *testing.T) {
	t.Parallel()
	browser(t)
	srv, c := startSeededJWT(t, "QUEEN_TENANCY_HEADER="+proxytest.TenancyHeader)
	p := proxytest.Start(t, proxytest.Options{Backends: []string{srv.URL}, Login: true,
		Env: []string{"QUEEN_PROXY_BROKER_AUTH=jwt", "QUEEN_PROXY_BROKER_JWT_KEY=" + jwtSecret}})
	p.WaitBackends(t, "up", 10*time.Second)
	require.Equal(t, http.StatusCreated, p.Admin(t, http.MethodPost, "/admin/v1/users",
		map[string]any{"username": "root", "password": "root-password-1", "role": "admin"}, nil))

	tb := newTab(t, p.URL)
	tb.do("open /queues", chromedp.Navigate(p.URL+"/queues"))
	tb.waitJS("the proxy's sign-in page", `location.pathname === '/login' && !!document.querySelector('#username')`)
	tb.fill("#username", "root")
	tb.fill("#password", "root-password-1")
	tb.click(`button[type="submit"]`)
	tb.do("the dashboard mounts after the sign-in", chromedp.WaitVisible(chromedp.CSS(`[data-testid="app-root"] > *`)))
	tmp := `[data-testid="table-queues"] tr[data-testid="row"][data-key="e2e.tmp"]`
	tb.waitJS("the broker's queues, signed in", `location.pathname === '/queues' && !!window.qt && qt.ready('queues')
		&& qt.has('`+tmp+`') && !!qt.row('table-queues', 'e2e.orders')`)
	require.False(t, eval[bool](tb, `qt.has('[data-testid="connect-screen"]')`), "the Connect screen behind the proxy")
	require.Equal(t, "root", tb.text(`[data-testid="who-user"]`))
	tb.clean("the queues page through queen-proxy, broker JWT on")

	// The session cookie is the proxy's own: the broker refuses it.
	session := tb.sessionCookie(p.URL)
	status, _ := newClient(srv.URL, session).call(t, "GET", "/api/v1/resources/queues", nil)
	require.Equal(t, http.StatusUnauthorized, status, "the session token at the broker itself")

	tb.click(tmp + ` [data-testid="queue-delete"]`)
	tb.accept()
	tb.waitToast("ok", "queue e2e.tmp deleted")
	tb.waitJS("the row goes", `!qt.has('`+tmp+`') && !!qt.row('table-queues', 'e2e.orders')`)
	status, _ = c.call(t, "GET", "/api/v1/resources/queues/e2e.tmp", nil)
	require.Equal(t, http.StatusNotFound, status, "the queue at the broker after the delete")
	status, _ = c.call(t, "GET", "/api/v1/resources/queues/e2e.orders", nil)
	require.Equal(t, http.StatusOK, status, "the other queue at the broker")
	tb.clean("a queue delete through queen-proxy, broker JWT on")
}

// sessionCookie reads queen-proxy's session cookie for url (httpOnly: over DevTools);
// the test fails when there is none.
func (tb *tab) sessionCookie(url string) string {
	tb.t.Helper()
	var session string
	tb.do("read the session cookie", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		res, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{url}})
		if err != nil {
			return err
		}
		for _, c := range res.Cookies {
			if c.Name == "token" {
				session = c.Value
			}
		}
		return nil
	}))
	require.NotEmpty(tb.t, session, "the proxy's session cookie")
	return session
}
