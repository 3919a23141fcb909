package daemon_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// auditEntry is one row of queen_proxy.audit_log.
type auditEntry struct {
	Actor, Action, Target string
	Detail                map[string]any
}

// auditLog returns the proxy's audit log entries of action, oldest first.
func auditLog(t *testing.T, dbURL, action string) []auditEntry {
	t.Helper()
	db, err := pgxpool.New(t.Context(), dbURL)
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.Query(t.Context(), `SELECT actor, action, target, detail FROM queen_proxy.audit_log
		WHERE action = $1 ORDER BY id`, action)
	require.NoError(t, err)
	defer rows.Close()
	var out []auditEntry
	for rows.Next() {
		var e auditEntry
		var detail []byte
		require.NoError(t, rows.Scan(&e.Actor, &e.Action, &e.Target, &detail))
		require.NoError(t, json.Unmarshal(detail, &e.Detail))
		out = append(out, e)
	}
	require.NoError(t, rows.Err())
	return out
}

// stateRows counts the rows of each key of a tenant's state at the broker (its
// tenancy export).
func stateRows(t *testing.T, p *tenantPair, tenantID string, keys ...string) map[string]int {
	t.Helper()
	r := call(t, http.MethodGet, p.broker.URL+"/internal/api/tenancy/export/state?tenant="+tenantID, "", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var state map[string][]any
	r.json(t, &state)
	out := map[string]int{}
	for _, k := range keys {
		out[k] = len(state[k])
	}
	return out
}

// The admin API's purge deletes everything a suspended tenant has at the broker
// (queues, KV entries, timers), keeps the other tenants' and writes the audit log;
// an active tenant is refused (409).
func TestTenantPurge(t *testing.T) {
	t.Parallel()
	p := setupPair(t)
	p.push(t, p.acme, "acme", "orders", 2, "a")
	p.push(t, p.acme, "acme", "billing", 1, "b")
	p.push(t, p.bob, "bob", "orders", 3, "c")
	for _, key := range []createdKey{p.acme, p.bob} {
		r := p.do(t, key, http.MethodPost, "/api/v1/kv", []any{map[string]any{"op": "put", "ns": "pz", "key": "k", "value": 1, "forever": true}})
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r = p.do(t, key, http.MethodPost, "/api/v1/timers", []any{map[string]any{"op": "schedule", "queue": "orders",
			"timerKey": "later", "delayMs": 3600000, "txn": "t-later", "payload": "e30="}})
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	}
	require.Equal(t, map[string]int{"kv": 1, "timers": 1}, stateRows(t, p, "acme", "kv", "timers"))

	var e struct{ Code string }
	require.Equal(t, http.StatusConflict, p.proxy.Admin(t, http.MethodPost, "/admin/v1/tenants/acme/purge", nil, &e))
	require.Equal(t, "conflict", e.Code)
	require.Len(t, brokerQueues(t, p.broker), 3, "the refused purge deleted queues")
	require.Empty(t, auditLog(t, p.proxy.DBURL, "tenant.purge"), "the refused purge is in the audit log")
	require.Equal(t, http.StatusNotFound, p.proxy.Admin(t, http.MethodPost, "/admin/v1/tenants/nobody/purge", nil, nil))

	require.Equal(t, http.StatusOK, p.proxy.Admin(t, http.MethodPatch, "/admin/v1/tenants/acme",
		map[string]string{"status": "suspended"}, nil))
	var res struct {
		QueuesDeleted int `json:"queuesDeleted"`
	}
	require.Equal(t, http.StatusOK, p.proxy.Admin(t, http.MethodPost, "/admin/v1/tenants/acme/purge", nil, &res))
	require.Equal(t, 2, res.QueuesDeleted)
	require.Equal(t, map[string]int{"bob:orders": 3}, brokerQueues(t, p.broker))
	require.Equal(t, map[string]int{"kv": 0, "timers": 0}, stateRows(t, p, "acme", "kv", "timers"),
		"a timer left behind would bring a purged queue back when it fires")
	require.Equal(t, map[string]int{"kv": 1, "timers": 1}, stateRows(t, p, "bob", "kv", "timers"))
	require.Equal(t, []auditEntry{{Actor: "admin-token", Action: "tenant.purge", Target: "acme",
		Detail: map[string]any{"queuesDeleted": 2.0, "complete": true}}}, auditLog(t, p.proxy.DBURL, "tenant.purge"))
}
