package daemon_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/cli"
	"github.com/queenmq/queen/internal/client"
	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// queenctl runs one queenctl invocation in process with an empty config file and
// returns its exit status and output.
func queenctl(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := []string{"QUEENCTL_CONFIG=" + t.TempDir() + "/config.yaml"}
	code := cli.Main(t.Context(), args, env, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// An unchanged Queen client puts an API key where it puts a bearer token: push,
// pop and ack work through the proxy. (The original Queen Go and JS clients are not on
// the module proxy or npm, so this is the repository's own Go client.)
func TestGoClientWithKeyAsBearer(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	createTenant(t, b.proxy, tenantSpec{ID: "acme"})
	k := createKey(t, b.proxy, "acme", "write")
	c := client.New(b.proxy.URL, client.WithToken(k.Key))
	ctx := t.Context()

	res, err := c.Push(ctx, api.PushItem{Queue: "orders", Payload: json.RawMessage(`{"n":1}`)},
		api.PushItem{Queue: "orders", Payload: json.RawMessage(`{"n":2}`)})
	require.NoError(t, err)
	require.Len(t, res, 2)
	pop, err := c.Pop(ctx, client.PopOptions{Queue: "orders", Batch: 10})
	require.NoError(t, err)
	require.Len(t, pop.Messages, 2)
	for _, m := range pop.Messages {
		ack, err := c.Ack(ctx, api.AckRequest{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: m.LeaseID})
		require.NoError(t, err)
		require.True(t, ack.Success, "%+v", ack)
	}
	pop, err = c.Pop(ctx, client.PopOptions{Queue: "orders", Batch: 10})
	require.NoError(t, err)
	require.Empty(t, pop.Messages, "acked messages came back")

	_, err = client.New(b.proxy.URL, client.WithToken("qk_not_a_key")).Push(ctx, api.PushItem{Queue: "orders"})
	require.Equal(t, http.StatusUnauthorized, client.AsError(err).StatusCode)
}

// A queenctl login --method password token works through the proxy: an operator's
// in global scope, a tenant user's in its tenant; /api/me shows the user, and after
// /api/logout the token is refused.
func TestQueenctlLoginThroughProxy(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{login: true})
	createTenant(t, b.proxy, tenantSpec{ID: "acme"})
	createUser(t, b.proxy, "op", "operator-password", "admin", "")
	createUser(t, b.proxy, "alice", "alice-password", "read-write", "acme")

	loginAs := func(user, pw string) string {
		code, out, errOut := queenctl(t, pw+"\n", "login", "--method", "password", "--server", b.proxy.URL,
			"--username", user, "-o", "json")
		require.Equal(t, cli.ExitOK, code, "%s%s", out, errOut)
		var ans struct{ Token, Username string }
		require.NoError(t, json.Unmarshal([]byte(out), &ans), out)
		require.Equal(t, user, ans.Username)
		return ans.Token
	}
	code, _, errOut := queenctl(t, "wrong-password\n", "login", "--server", b.proxy.URL, "--username", "alice")
	require.Equal(t, cli.ExitAuth, code, errOut)
	require.Contains(t, errOut, "Invalid credentials")

	alice := loginAs("alice", "alice-password")
	code, out, errOut := queenctl(t, "", "push", "orders", `{"n":1}`, "--server", b.proxy.URL, "--token", alice)
	require.Equal(t, cli.ExitOK, code, "%s%s", out, errOut)
	code, out, errOut = queenctl(t, "", "pop", "orders", "--auto-ack", "--server", b.proxy.URL, "--token", alice, "-o", "json")
	require.Equal(t, cli.ExitOK, code, "%s%s", out, errOut)
	require.Contains(t, out, `"n": 1`)
	require.Contains(t, brokerQueues(t, b.broker), "acme:orders", "the tenant user is not scoped")
	code, _, _ = queenctl(t, "", "maintenance", "status", "--server", b.proxy.URL, "--token", alice)
	require.Equal(t, cli.ExitAuth, code, "a tenant user reached a global route")

	// The operator is in global scope: it sees the stored names.
	op := loginAs("op", "operator-password")
	code, out, errOut = queenctl(t, "", "queue", "list", "--server", b.proxy.URL, "--token", op)
	require.Equal(t, cli.ExitOK, code, "%s%s", out, errOut)
	require.Contains(t, out, "acme:orders", "the operator is not in global scope")

	var m me
	call(t, http.MethodGet, b.proxy.URL+"/api/me", alice, nil).json(t, &m)
	require.Equal(t, "alice", m.Username)
	require.Equal(t, http.StatusOK, call(t, http.MethodPost, b.proxy.URL+"/api/logout", alice, nil).status)
	require.Equal(t, http.StatusUnauthorized, call(t, http.MethodGet, b.proxy.URL+"/api/me", alice, nil).status)
	code, _, _ = queenctl(t, "", "queue", "list", "--server", b.proxy.URL, "--token", alice)
	require.Equal(t, cli.ExitAuth, code, "a logged-out token still works")
}

// queenctl proxy drives the admin API: tenants with limits and quotas, keys, users
// and usage, with the admin token or an operator's session.
func TestQueenctlProxyCommands(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{login: true})
	adm := []string{"--admin-url", b.proxy.AdminURL, "--admin-token", proxytest.AdminToken, "-o", "json"}
	run := func(stdin string, v any, args ...string) {
		t.Helper()
		code, out, errOut := queenctl(t, stdin, append(append([]string{"proxy"}, args...), adm...)...)
		require.Equal(t, cli.ExitOK, code, "%v: %s%s", args, out, errOut)
		if v != nil {
			require.NoError(t, json.Unmarshal([]byte(out), v), out)
		}
	}
	var tn struct {
		ID     string
		Limits struct{ RequestsPerSecond float64 }
		Quotas struct{ MaxQueues int64 }
		Status string
	}
	run("", &tn, "tenant", "create", "bob", "--limits", `{"requestsPerSecond":5}`)
	require.EqualValues(t, 5, tn.Limits.RequestsPerSecond)
	run("", &tn, "tenant", "update", "bob", "--quotas", `{"maxQueues":2}`)
	require.EqualValues(t, 2, tn.Quotas.MaxQueues)
	run("", &tn, "tenant", "suspend", "bob")
	require.Equal(t, "suspended", tn.Status)
	run("", &tn, "tenant", "resume", "bob")
	require.Equal(t, "active", tn.Status)
	var k struct{ ID, Key string }
	run("", &k, "key", "create", "bob", "--scope", "write", "--name", "ci")
	require.True(t, strings.HasPrefix(k.Key, "qk_"))
	require.Equal(t, http.StatusCreated, call(t, http.MethodPost, b.proxy.URL+"/api/v1/push", k.Key, pushBody("jobs", 1, nil)).status)
	var producer struct{ ID, Key, Scope string }
	run("", &producer, "key", "create", "bob", "--scope", "push", "--name", "producer")
	require.Equal(t, "push", producer.Scope)
	require.Equal(t, http.StatusCreated, call(t, http.MethodPost, b.proxy.URL+"/api/v1/push", producer.Key, pushBody("jobs", 1, nil)).status)
	require.Equal(t, http.StatusForbidden, call(t, http.MethodGet, b.proxy.URL+"/api/v1/pop/queue/jobs?wait=false", producer.Key, nil).status)
	var keys struct{ Keys []struct{ ID, Scope string } }
	run("", &keys, "key", "list", "bob")
	require.Len(t, keys.Keys, 2)
	require.ElementsMatch(t, []string{"write", "push"}, []string{keys.Keys[0].Scope, keys.Keys[1].Scope})
	var rot struct{ ID string }
	run("", &rot, "key", "rotate", k.ID, "--grace", "1m")
	require.NotEqual(t, k.ID, rot.ID)
	run("", nil, "key", "revoke", rot.ID)
	var u struct{ Username string }
	run("op-password\n", &u, "user", "create", "op", "--role", "admin")
	require.Equal(t, "op", u.Username)
	run("op-password-2\n", nil, "user", "passwd", "op")
	var users struct{ Users []struct{ Username string } }
	run("", &users, "user", "list")
	require.Len(t, users.Users, 1)
	var usage struct{ Tenants []struct{ Tenant string } }
	run("", &usage, "usage", "--granularity", "day")
	var rep struct{ Tenant string }
	run("", &rep, "usage", "--tenant", "bob", "--granularity", "minute")
	require.Equal(t, "bob", rep.Tenant)

	// An operator's session with role admin opens the admin API too.
	code, out, errOut := queenctl(t, "op-password-2\n", "login", "--server", b.proxy.URL, "--username", "op", "-o", "json")
	require.Equal(t, cli.ExitOK, code, "%s%s", out, errOut)
	var ans struct{ Token string }
	require.NoError(t, json.Unmarshal([]byte(out), &ans))
	code, out, errOut = queenctl(t, "", "proxy", "tenant", "list", "--admin-url", b.proxy.AdminURL, "--admin-token", ans.Token)
	require.Equal(t, cli.ExitOK, code, "%s%s", out, errOut)
	require.Contains(t, out, "bob")

	code, _, errOut = queenctl(t, "", "proxy", "tenant", "create", "Bad_Id", "--admin-url", b.proxy.AdminURL,
		"--admin-token", proxytest.AdminToken)
	require.Equal(t, cli.ExitFailure, code)
	require.Contains(t, errOut, "field id")
	code, _, _ = queenctl(t, "", "proxy", "tenant", "get", "nobody", "--admin-url", b.proxy.AdminURL,
		"--admin-token", proxytest.AdminToken)
	require.Equal(t, cli.ExitNotFound, code)
	code, _, _ = queenctl(t, "", "proxy", "tenant", "list", "--admin-url", b.proxy.AdminURL, "--admin-token", "wrong")
	require.Equal(t, cli.ExitAuth, code)
}
