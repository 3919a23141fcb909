package daemon_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// With QUEEN_PROXY_BROKER_AUTH=jwt in front of a broker that verifies JWTs, the
// broker sees only the tokens the proxy mints: each message records the subject of
// the credential that pushed it (the tenant's key, the tenant's user), and neither
// the key nor the session token works at the broker itself.
func TestBrokerJWT(t *testing.T) {
	t.Parallel()
	const secret = "broker-hs256-secret-0123456789abcdef"
	broker := proxytest.StartBroker(t, daemontest.Options{Env: []string{"JWT_ENABLED=true", "JWT_ALGORITHM=HS256",
		"JWT_SECRET=" + secret, "JWT_ISSUER=queen-proxy", "JWT_AUDIENCE=queen"}})
	p := proxytest.Start(t, proxytest.Options{Backends: []string{broker.URL}, Login: true,
		Env: []string{"QUEEN_PROXY_BROKER_AUTH=jwt", "QUEEN_PROXY_BROKER_JWT_KEY=" + secret}})
	p.WaitBackends(t, "up", 10*time.Second)
	createTenant(t, p, tenantSpec{ID: "acme"})
	k := createKey(t, p, "acme", "write")
	createUser(t, p, "alice", "alice-password", "read-write", "acme")
	createUser(t, p, "op", "operator-password", "admin", "")
	alice, op := login(t, p, "alice", "alice-password"), login(t, p, "op", "operator-password")

	r := call(t, http.MethodPost, p.URL+"/api/v1/push", k.Key, pushBody("orders", 1, func(int) string { return "by-key" }))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	r = call(t, http.MethodPost, p.URL+"/api/v1/push", alice, pushBody("orders", 1, func(int) string { return "by-alice" }))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)

	// The operator reads in global scope, as admin.
	r = call(t, http.MethodGet, p.URL+"/api/v1/messages", op, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var list api.MessageList
	r.json(t, &list)
	subs := map[string]string{}
	for _, m := range list.Messages {
		require.Equal(t, "acme:orders", m.Queue)
		require.NotNil(t, m.ProducerSub, "message %s has no producer", m.TransactionID)
		subs[m.TransactionID] = *m.ProducerSub
	}
	require.Equal(t, map[string]string{"by-key": "acme/" + k.ID, "by-alice": "acme/user:alice"}, subs)

	// The client credentials themselves open nothing at the broker.
	for _, tok := range []string{k.Key, alice, op} {
		require.Equal(t, http.StatusUnauthorized, call(t, http.MethodGet, broker.URL+"/api/v1/resources/queues", tok, nil).status)
	}
}
