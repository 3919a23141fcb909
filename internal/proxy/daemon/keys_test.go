package daemon_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/proxytest"
	"github.com/queenmq/queen/internal/proxy/store"
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
		r = call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", "qk_aaaaaaaaaaaa_"+strings.Repeat("A", 49), nil)
		require.Equal(t, http.StatusUnauthorized, r.status)
	})

	t.Run("RevocationReachesTheOtherReplica", func(t *testing.T) {
		other := proxytest.Start(t, proxytest.Options{DBURL: p.DBURL, Upstreams: []string{b.shim.URL},
			Env: []string{"QUEEN_PROXY_AUTH_CACHE_TTL=2s"}})
		other.WaitUpstreams(t, "up", 10*time.Second)
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
