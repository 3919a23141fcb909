package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
)

type cliBundle struct {
	env []string
}

func (b *cliBundle) run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := realMain(args, b.env, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// ok runs a command that must succeed and decodes its -o json answer into v, strictly:
// with an api type, a field the admin API does not answer fails the test.
func (b *cliBundle) ok(t *testing.T, v any, stdin string, args ...string) {
	t.Helper()
	code, out, errOut := b.run(t, stdin, append(args, "-o", "json")...)
	require.Equal(t, exitOK, code, "%v: %s%s", args, out, errOut)
	if v != nil {
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(v), "%s", out)
	}
}

// The management commands work on the proxy database with no server running.
func TestManageCommands(t *testing.T) {
	t.Parallel()
	b := &cliBundle{env: append(daemontest.PGEnv(t, pgtest.NewDBURL(t)), "QUEEN_PROXY_LOGIN=false", "USER=tester")}

	// The commands print the admin API's bodies.
	var tn api.ProxyTenant
	b.ok(t, &tn, "", "tenant", "create", "acme", "--name", "Acme", "--limits", `{"requestsPerSecond":50}`)
	require.Equal(t, "acme", tn.ID)
	require.EqualValues(t, 50, tn.Limits.RequestsPerSecond)
	code, _, errOut := b.run(t, "", "tenant", "create", "acme")
	require.Equal(t, exitFailure, code)
	require.Contains(t, errOut, "already exists")
	code, _, errOut = b.run(t, "", "tenant", "create", "Bad_Id")
	require.Equal(t, exitFailure, code)
	require.Contains(t, errOut, "invalid id")
	b.ok(t, &tn, "", "tenant", "update", "acme", "--quotas", `{"maxQueues":3}`)
	require.EqualValues(t, 3, tn.Quotas.MaxQueues)
	require.EqualValues(t, 50, tn.Limits.RequestsPerSecond, "an update of quotas changed the limits")

	code, out, _ := b.run(t, "", "tenant", "list")
	require.Equal(t, exitOK, code)
	require.Contains(t, out, "acme")
	require.Contains(t, out, "STATUS")

	var k api.ProxyNewKey
	b.ok(t, &k, "", "key", "create", "acme", "--scope", "write", "--queues", "orders*", "--name", "ci")
	require.True(t, strings.HasPrefix(k.Key, "qk_"))
	require.Equal(t, []string{"orders*"}, k.Queues)
	code, out, _ = b.run(t, "", "key", "create", "acme", "--scope", "read")
	require.Equal(t, exitOK, code)
	require.Contains(t, out, "shown once")
	var producer api.ProxyNewKey
	b.ok(t, &producer, "", "key", "create", "acme", "--scope", "push", "--name", "producer")
	require.Equal(t, "push", producer.Scope)
	code, out, _ = b.run(t, "", "key", "list", "acme")
	require.Equal(t, exitOK, code)
	require.Regexp(t, `(?m)^`+producer.ID+`\s+acme\s+producer\s+push\s`, out, "the table shows the push scope")
	code, _, errOut = b.run(t, "", "key", "create", "acme", "--scope", "produce")
	require.Equal(t, exitFailure, code)
	require.Contains(t, errOut, "push", "the refusal names the push scope")
	b.ok(t, nil, "", "key", "revoke", producer.ID)
	var rotated api.ProxyNewKey
	b.ok(t, &rotated, "", "key", "rotate", k.ID, "--grace", "1h")
	require.NotEqual(t, k.ID, rotated.ID)
	var revoked api.ProxyKey
	b.ok(t, &revoked, "", "key", "revoke", rotated.ID)
	require.NotNil(t, revoked.RevokedAt)
	var keys api.ProxyKeyList
	b.ok(t, &keys, "", "key", "list", "acme")
	require.Len(t, keys.Keys, 4)

	var u api.ProxyUser
	b.ok(t, &u, "alice-password\n", "user", "create", "alice", "--role", "read-write", "--tenant", "acme")
	require.Equal(t, "acme", *u.Tenant)
	b.ok(t, &u, "op-password\n", "user", "create", "op", "--role", "admin")
	require.Nil(t, u.Tenant)
	code, _, errOut = b.run(t, "short\n", "user", "create", "bob", "--role", "read-only")
	require.Equal(t, exitFailure, code)
	require.Contains(t, errOut, "password")
	b.ok(t, nil, "new-password\n", "user", "passwd", "alice")
	var users api.ProxyUserList
	b.ok(t, &users, "", "user", "list")
	require.Len(t, users.Users, 2)
	b.ok(t, nil, "", "user", "delete", "op")
	code, _, errOut = b.run(t, "", "user", "delete", "op")
	require.Equal(t, exitFailure, code)
	require.Contains(t, errOut, "not found")

	var usage api.ProxyUsageTotals
	b.ok(t, &usage, "", "usage", "--granularity", "day")
	require.Equal(t, "day", usage.Granularity)
	var rep api.ProxyUsageReport
	b.ok(t, &rep, "", "usage", "--tenant", "acme", "--granularity", "minute")
	require.Equal(t, "acme", rep.Tenant)
	code, _, errOut = b.run(t, "", "usage", "--granularity", "week")
	require.Equal(t, exitFailure, code)
	require.Contains(t, errOut, "granularity")

	code, _, errOut = b.run(t, "", "tenant", "purge", "acme")
	require.Equal(t, exitFailure, code)
	require.Contains(t, errOut, "suspend or delete")
	b.ok(t, &tn, "", "tenant", "suspend", "acme")
	require.Equal(t, "suspended", tn.Status)
	b.ok(t, &tn, "", "tenant", "resume", "acme")
	require.Equal(t, "active", tn.Status)
	var del api.ProxyTenantDeleted
	b.ok(t, &del, "", "tenant", "delete", "acme")
	require.Equal(t, 2, del.KeysRevoked, "the rotated key (in its grace) and the read key were live")
}

func TestManageExitCodes(t *testing.T) {
	t.Parallel()
	b := &cliBundle{env: []string{"PG_PORT=sixty"}}
	code, _, errOut := b.run(t, "", "tenant", "list")
	require.Equal(t, exitConfig, code)
	require.Contains(t, errOut, "PG_PORT")
	code, _, _ = b.run(t, "", "tenant", "frobnicate")
	require.Equal(t, exitUsage, code)
	code, _, _ = b.run(t, "", "tenant", "show")
	require.Equal(t, exitUsage, code)
}

// The management commands read and check only the settings they need: the
// database's, and the brokers' for a purge. What only the server needs (a session
// key while login is on, an admin token of 32 characters or more) cannot stop them.
func TestManageNeedsOnlyItsSettings(t *testing.T) {
	t.Parallel()
	b := &cliBundle{env: append(daemontest.PGEnv(t, pgtest.NewDBURL(t)), // login on, no session key
		"QUEEN_PROXY_ADMIN_TOKEN=short", "QUEEN_PROXY_TLS_CERT_FILE=/nowhere.pem", "QUEEN_PROXY_SHUTDOWN_DELAY=1h")}
	var tn api.ProxyTenant
	b.ok(t, &tn, "", "tenant", "create", "acme")
	b.ok(t, &tn, "", "tenant", "suspend", "acme")
	var list api.ProxyTenantList
	b.ok(t, &list, "", "tenant", "list", "--status", "suspended")
	require.Equal(t, 1, list.Total)

	// A purge calls the brokers: their settings are checked.
	b.env = append(b.env, "QUEEN_PROXY_BROKER_AUTH=jwt")
	code, _, errOut := b.run(t, "", "tenant", "purge", "acme")
	require.Equal(t, exitConfig, code, "%s", errOut)
	require.Contains(t, errOut, "QUEEN_PROXY_BROKER_JWT_KEY")
	require.NotContains(t, errOut, "QUEEN_PROXY_SESSION_KEY")
	code, _, errOut = b.run(t, "", "tenant", "show", "acme")
	require.Equal(t, exitOK, code, "%s", errOut)
}
