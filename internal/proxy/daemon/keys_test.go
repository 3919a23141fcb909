package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/proxy/proxytest"
	"github.com/queenmq/queen/internal/proxy/session"
	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

func TestKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{env: []string{"QUEEN_PROXY_AUTH_CACHE_TTL=2s", "LOG_LEVEL=debug"}})
	createTenant(t, b.proxy, tenantSpec{ID: "acme"})
	w := createKey(t, b.proxy, "acme", "write")
	p := b.proxy

	t.Run("CredentialsInQueryAreRefusedAndNotLogged", func(t *testing.T) {
		for _, q := range []string{"?api_key=" + url.QueryEscape(w.Key), "?x=" + url.QueryEscape(w.Key), "?token=abc"} {
			r := call(t, http.MethodGet, p.URL+"/api/v1/resources/queues"+q, "", nil)
			require.Equal(t, http.StatusBadRequest, r.status, q)
			require.Equal(t, "credentials_in_query", r.code(t))
		}
		require.NotContains(t, b.logs.String(), w.Key[len("qk_")+13:], "a key secret reached the log")
		require.Contains(t, b.logs.String(), w.ID, "the refusal is logged with the key id")
	})

	t.Run("TwoAuthorizationHeadersAreRefused", func(t *testing.T) {
		other := createKey(t, p, "acme", "read")
		// Either order: which of two keys counts would be a guess.
		for _, keys := range [][2]string{{w.Key, other.Key}, {other.Key, w.Key}} {
			r := call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", keys[0], nil, "Authorization", "Bearer "+keys[1])
			require.Equal(t, http.StatusUnauthorized, r.status, "%s", r.body)
		}
		r := call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", w.Key, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	})

	t.Run("NoSecretInTheDatabase", func(t *testing.T) {
		db, err := pgxpool.New(t.Context(), p.DBURL)
		require.NoError(t, err)
		defer db.Close()
		var dump string
		require.NoError(t, db.QueryRow(t.Context(), `SELECT coalesce(string_agg(k::text, ' '), '') || ' ' ||
			(SELECT coalesce(string_agg(a::text, ' '), '') FROM queen_proxy.audit_log a) FROM queen_proxy.api_keys k`).Scan(&dump))
		require.Contains(t, dump, w.ID)
		require.NotContains(t, dump, w.Key[len("qk_")+13:])
	})

	t.Run("Scopes", func(t *testing.T) {
		read := createKey(t, p, "acme", "read")
		r := call(t, http.MethodPost, p.URL+"/api/v1/push", read.Key, pushBody("orders", 1, nil))
		require.Equal(t, http.StatusForbidden, r.status)
		require.Equal(t, http.StatusOK, call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", read.Key, nil).status)
		require.Equal(t, http.StatusForbidden, call(t, http.MethodDelete, p.URL+"/api/v1/resources/queues/orders", w.Key, nil).status)
		orders := createKey(t, p, "acme", "write", "orders*")
		require.Equal(t, http.StatusForbidden, call(t, http.MethodPost, p.URL+"/api/v1/push", orders.Key, pushBody("billing", 1, nil)).status)
		require.Equal(t, http.StatusForbidden, call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", orders.Key, nil).status)
		require.Equal(t, http.StatusForbidden, call(t, http.MethodGet, p.URL+"/api/v1/pop/queue/billing", orders.Key, nil).status)
		require.Equal(t, http.StatusCreated, call(t, http.MethodPost, p.URL+"/api/v1/push", orders.Key, pushBody("orders-eu", 1, nil)).status)
		// The broker reads the exact key "queue"; a look-alike key must not pass the list.
		for path, body := range map[string]string{
			"/api/v1/transaction": `{"operations":[{"type":"push","items":[{"queue":"billing","Queue":"orders","payload":1}]}]}`,
			"/api/v1/configure":   `{"queue":"billing","QUEUE":"orders"}`,
			// KV is the tenant's, not a queue's: a kv rider spans queues.
			"/api/v1/transaction#kv": `{"operations":[{"type":"push","items":[{"queue":"orders","payload":1}]}],` +
				`"kv":[{"op":"get","ns":"secret","key":"k"}]}`,
		} {
			path, _, _ = strings.Cut(path, "#")
			r := call(t, http.MethodPost, p.URL+path, orders.Key, []byte(body))
			require.Equal(t, http.StatusForbidden, r.status, "%s: %s", path, r.body)
			if path == "/api/v1/transaction" { // the transaction's envelope, with a minted id
				var env struct {
					TransactionID string `json:"transactionId"`
					Success       *bool  `json:"success"`
					Reason        string `json:"reason"`
				}
				require.NoError(t, json.Unmarshal(r.body, &env), string(r.body))
				require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$`, env.TransactionID, string(r.body))
				require.False(t, *env.Success)
				require.Equal(t, "forbidden", env.Reason)
			}
		}
		r = call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", "qk_aaaaaaaaaaaa_"+strings.Repeat("A", 49), nil)
		require.Equal(t, http.StatusUnauthorized, r.status)
	})

	// Replica B is a process of its own: the revocation reaches A through the proxy
	// database only.
	t.Run("RevocationReachesTheOtherReplica", func(t *testing.T) {
		other := proxytest.Exec(t, proxytest.Options{DBURL: p.DBURL, Backends: []string{b.broker.URL},
			Env: []string{"QUEEN_PROXY_AUTH_CACHE_TTL=2s"}})
		other.WaitBackends(t, "up", 10*time.Second)
		k := createKey(t, p, "acme", "write")
		require.Equal(t, http.StatusOK, call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", k.Key, nil).status)
		require.Equal(t, http.StatusOK, other.Admin(t, http.MethodDelete, "/admin/v1/keys/"+k.ID, nil, nil))
		revoked := time.Now()
		eventually(t, time.Second, func() bool {
			return call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", k.Key, nil).status == http.StatusUnauthorized
		}, "the revoked key still works on replica A")
		t.Logf("revoked key refused after %s", time.Since(revoked))

		// With the listeners' connections killed, the TTL still bounds it.
		k2 := createKey(t, p, "acme", "write")
		require.Equal(t, http.StatusOK, call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", k2.Key, nil).status)
		killListeners(t, p.DBURL)
		require.Equal(t, http.StatusOK, other.Admin(t, http.MethodDelete, "/admin/v1/keys/"+k2.ID, nil, nil))
		eventually(t, 2*time.Second+time.Second, func() bool {
			return call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", k2.Key, nil).status == http.StatusUnauthorized
		}, "the revoked key still works after TTL + 1 s without LISTEN")
	})

	t.Run("RotationWithGrace", func(t *testing.T) {
		old := createKey(t, p, "acme", "write", "orders")
		var rotated createdKey
		require.Equal(t, http.StatusCreated, p.Admin(t, http.MethodPost, "/admin/v1/keys/"+old.ID+"/rotate",
			map[string]int{"graceSeconds": 5}, &rotated))
		require.Equal(t, []string{"orders"}, rotated.Queues)
		rotatedAt := time.Now()
		for _, k := range []string{old.Key, rotated.Key} {
			require.Equal(t, http.StatusCreated, call(t, http.MethodPost, p.URL+"/api/v1/push", k, pushBody("orders", 1, nil)).status)
		}
		eventually(t, 8*time.Second, func() bool {
			return call(t, http.MethodGet, p.URL+"/api/v1/resources/queues/orders", old.Key, nil).status == http.StatusUnauthorized
		}, "the old key outlives its grace")
		require.Greater(t, time.Since(rotatedAt), 4*time.Second, "the old key stopped before its grace")
		require.Equal(t, http.StatusCreated, call(t, http.MethodPost, p.URL+"/api/v1/push", rotated.Key, pushBody("orders", 1, nil)).status)
	})
}

// killListeners terminates the auth listeners' connections to the proxy database.
func killListeners(t *testing.T, dbURL string) {
	t.Helper()
	db, err := pgxpool.New(context.WithoutCancel(t.Context()), dbURL)
	require.NoError(t, err)
	defer db.Close()
	var n int
	require.NoError(t, db.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND datname = current_database()`, store.ListenerApplicationName).Scan(&n))
	require.Positive(t, n)
}

// A client address that presents session.MaxKeyFailures unknown or malformed keys
// within the window gets 429 with Retry-After for its keys, even a good one, while
// other addresses are served; revoked keys never count. X-Forwarded-For names the
// address only when the peer is a trusted proxy.
func TestUnknownKeysPerAddress(t *testing.T) {
	t.Parallel()
	broker := proxytest.StartBroker(t, daemontest.Options{})
	direct := proxytest.Start(t, proxytest.Options{Backends: []string{broker.URL}})
	behindLB := proxytest.Start(t, proxytest.Options{Backends: []string{broker.URL},
		Env: []string{"QUEEN_PROXY_TRUSTED_PROXIES=127.0.0.1/32"}})
	for _, p := range []*proxytest.Proxy{direct, behindLB} {
		p.WaitBackends(t, "up", 10*time.Second)
		createTenant(t, p, tenantSpec{ID: "acme"})
	}
	// guess presents MaxKeyFailures bad keys (unknown ids, and one malformed) with the
	// given headers, each refused with 401.
	guess := func(p *proxytest.Proxy, hdr ...string) {
		t.Helper()
		for i := range session.MaxKeyFailures {
			_, key := tenant.NewKey()
			if i == 0 {
				key = "qk_" + strings.Repeat("x", 40)
			}
			r := call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", key, nil, hdr...)
			require.Equal(t, http.StatusUnauthorized, r.status, "bad key %d", i)
		}
	}
	locked := func(r reply) {
		t.Helper()
		require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
		require.Equal(t, "rate_limited", r.code(t))
		retry, err := strconv.Atoi(r.header.Get("Retry-After"))
		require.NoError(t, err)
		require.InDelta(t, session.Window.Seconds(), retry, 60)
	}

	t.Run("Direct", func(t *testing.T) {
		good := createKey(t, direct, "acme", "read")
		revoked := createKey(t, direct, "acme", "read")
		require.Equal(t, http.StatusOK, direct.Admin(t, http.MethodDelete, "/admin/v1/keys/"+revoked.ID, nil, nil))
		for range session.MaxKeyFailures + 5 {
			require.Equal(t, http.StatusUnauthorized, call(t, http.MethodGet, direct.URL+"/api/v1/resources/queues", revoked.Key, nil).status)
		}
		require.Equal(t, http.StatusOK, call(t, http.MethodGet, direct.URL+"/api/v1/resources/queues", good.Key, nil).status,
			"revoked keys counted against the address")

		guess(direct)
		_, unknown := tenant.NewKey()
		locked(call(t, http.MethodGet, direct.URL+"/api/v1/resources/queues", unknown, nil))
		locked(call(t, http.MethodGet, direct.URL+"/api/v1/resources/queues", good.Key, nil))
		// The peer is not a trusted proxy: its X-Forwarded-For changes nothing.
		locked(call(t, http.MethodGet, direct.URL+"/api/v1/resources/queues", good.Key, nil, "X-Forwarded-For", "203.0.113.9"))
		require.Contains(t, metric(t, direct, "queen_proxy_auth_failures_total"), `reason="key_locked"`)
	})

	t.Run("BehindATrustedProxy", func(t *testing.T) {
		good := createKey(t, behindLB, "acme", "read")
		guess(behindLB, "X-Forwarded-For", "203.0.113.7")
		locked(call(t, http.MethodGet, behindLB.URL+"/api/v1/resources/queues", good.Key, nil, "X-Forwarded-For", "203.0.113.7"))
		for _, hdr := range [][]string{{"X-Forwarded-For", "203.0.113.8"}, nil} {
			r := call(t, http.MethodGet, behindLB.URL+"/api/v1/resources/queues", good.Key, nil, hdr...)
			require.Equal(t, http.StatusOK, r.status, "another address (%v) is refused: %s", hdr, r.body)
		}
	})
}

// metric returns the lines of the proxy's metric name on the admin listener.
func metric(t *testing.T, p *proxytest.Proxy, name string) string {
	t.Helper()
	r := call(t, http.MethodGet, p.AdminURL+"/metrics/prometheus", proxytest.AdminToken, nil)
	require.Equal(t, http.StatusOK, r.status)
	var lines []string
	for _, l := range strings.Split(string(r.body), "\n") {
		if strings.HasPrefix(l, name) {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}
