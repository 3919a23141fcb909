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

// The admin API's purge deletes a suspended tenant's queues at the broker, keeps
// the other tenants' and writes the audit log; an active tenant is refused (409).
func TestTenantPurge(t *testing.T) {
	t.Parallel()
	p := setupPair(t)
	p.push(t, p.acme, "acme", "orders", 2, "a")
	p.push(t, p.acme, "acme", "billing", 1, "b")
	p.push(t, p.bob, "bob", "orders", 3, "c")

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
	require.Equal(t, []auditEntry{{Actor: "admin-token", Action: "tenant.purge", Target: "acme",
		Detail: map[string]any{"queuesDeleted": 2.0, "complete": true}}}, auditLog(t, p.proxy.DBURL, "tenant.purge"))
}
