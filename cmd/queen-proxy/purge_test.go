package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// brokerDo sends one request to the broker, as tenant when not "", and decodes a JSON
// answer into out (when not nil); it returns the status.
func brokerDo(t *testing.T, broker *daemontest.Server, tenantID, method, path, body string, out any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, broker.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if tenantID != "" {
		req.Header.Set(proxytest.TenancyHeader, tenantID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil {
		require.NoError(t, json.Unmarshal(raw, out), "%s", raw)
	}
	return resp.StatusCode
}

// queen-proxy tenant purge deletes a suspended tenant's queues at the brokers (the
// server need not run), keeps the other tenants' and writes the audit log as
// cli:$USER.
func TestManagePurge(t *testing.T) {
	t.Parallel()
	broker := proxytest.StartBroker(t, daemontest.Options{})
	dbURL := pgtest.NewDBURL(t)
	b := &cliBundle{env: append(daemontest.PGEnv(t, dbURL), "QUEEN_PROXY_LOGIN=false", "USER=tester",
		"QUEEN_PROXY_UPSTREAMS="+broker.URL)}
	for _, push := range []struct{ tenant, queue string }{{"acme", "orders"}, {"acme", "billing"}, {"bob", "orders"}} {
		require.Equal(t, http.StatusCreated, brokerDo(t, broker, push.tenant, http.MethodPost, "/api/v1/push",
			`{"items":[{"queue":"`+push.queue+`","payload":{}}]}`, nil))
	}
	b.ok(t, nil, "", "tenant", "create", "acme")

	code, _, errOut := b.run(t, "", "tenant", "purge", "acme")
	require.Equal(t, exitFailure, code)
	require.Contains(t, errOut, "suspend or delete")
	b.ok(t, nil, "", "tenant", "suspend", "acme")
	var res api.ProxyPurged
	b.ok(t, &res, "", "tenant", "purge", "acme")
	require.Equal(t, 2, res.QueuesDeleted)

	var list api.QueueList
	require.Equal(t, http.StatusOK, brokerDo(t, broker, "", http.MethodGet, "/api/v1/resources/queues", "", &list))
	require.Len(t, list.Queues, 1)
	require.Equal(t, "bob:orders", list.Queues[0].Name)

	db, err := pgxpool.New(t.Context(), dbURL)
	require.NoError(t, err)
	defer db.Close()
	var actor, target string
	var detail map[string]any
	require.NoError(t, db.QueryRow(t.Context(), `SELECT actor, target, detail FROM queen_proxy.audit_log
		WHERE action = 'tenant.purge'`).Scan(&actor, &target, &detail))
	require.Equal(t, "cli:tester", actor)
	require.Equal(t, "acme", target)
	require.Equal(t, map[string]any{"queuesDeleted": 2.0, "complete": true}, detail)
}
