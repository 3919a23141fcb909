package daemon_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/proxy/proxytest"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// usageTotals reads the tenant's totals at granularity g over the last day.
func usageTotals(t *testing.T, p *proxytest.Proxy, tenantID string, g tenant.Granularity) tenant.Usage {
	t.Helper()
	now := time.Now().UTC()
	from := now.Add(-2 * time.Hour).Truncate(time.Hour)
	if g == tenant.GranularityDay {
		from = now.Add(-24 * time.Hour)
	}
	var u struct {
		Totals tenant.Usage `json:"totals"`
	}
	path := fmt.Sprintf("/admin/v1/tenants/%s/usage?granularity=%s&from=%s&to=%s", tenantID, g,
		from.Format(time.RFC3339), now.Add(2*time.Minute).Format(time.RFC3339))
	if code := p.Admin(t, http.MethodGet, path, nil, &u); code != http.StatusOK {
		t.Logf("usage: %d (the proxy database is back only once the pool reconnects)", code)
		return tenant.Usage{MessagesIn: -1}
	}
	return u.Totals
}

func TestMetering(t *testing.T) {
	t.Parallel()
	env := []string{"QUEEN_PROXY_USAGE_FLUSH_INTERVAL=200ms", "QUEEN_PROXY_AUTH_CACHE_TTL=500ms"}
	b := setup(t, setupOpts{env: env})
	p := b.proxy
	createTenant(t, p, tenantSpec{ID: "acme"})
	createTenant(t, p, tenantSpec{ID: "bob"})
	k := createKey(t, p, "acme", "write")

	var bytesIn int64
	send := func(p *proxytest.Proxy, method, path string, body any, want int) reply {
		t.Helper()
		if body != nil {
			raw, err := json.Marshal(body)
			require.NoError(t, err)
			bytesIn += int64(len(raw))
			body = raw
		}
		r := call(t, method, p.URL+path, k.Key, body)
		require.Equal(t, want, r.status, "%s", r.body)
		return r
	}
	// 10 pushes of 100 items; the last reuses 50 transaction ids of the first.
	for i := range 10 {
		send(p, http.MethodPost, "/api/v1/push", pushBody("orders", 100, func(j int) string {
			if i == 9 && j < 50 {
				return fmt.Sprintf("tx-0-%d", j)
			}
			return fmt.Sprintf("tx-%d-%d", i, j)
		}), http.StatusCreated)
	}
	popped := 0
	for popped < 950 {
		r := send(p, http.MethodGet, "/api/v1/pop/queue/orders?batch=200&wait=false", nil, http.StatusOK)
		var pop popAnswer
		r.json(t, &pop)
		acks := []map[string]string{}
		for _, m := range pop.Messages {
			acks = append(acks, map[string]string{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": pop.LeaseID})
		}
		send(p, http.MethodPost, "/api/v1/ack/batch", map[string]any{"acknowledgments": acks}, http.StatusOK)
		popped += len(pop.Messages)
	}
	require.Equal(t, 950, popped)
	send(p, http.MethodGet, "/api/v1/pop/queue/orders?wait=false", nil, http.StatusNoContent)
	// Two more, acked in a transaction: its acks count as acks.
	send(p, http.MethodPost, "/api/v1/push", pushBody("orders", 2, func(j int) string { return fmt.Sprintf("tx-ack-%d", j) }), http.StatusCreated)
	var pop popAnswer
	send(p, http.MethodGet, "/api/v1/pop/queue/orders?batch=10&wait=false", nil, http.StatusOK).json(t, &pop)
	require.Len(t, pop.Messages, 2)
	var ops []map[string]string
	for _, m := range pop.Messages {
		ops = append(ops, map[string]string{"type": "ack", "transactionId": m.TransactionID, "partitionId": m.PartitionID,
			"leaseId": pop.LeaseID, "status": "completed"})
	}
	send(p, http.MethodPost, "/api/v1/transaction", map[string]any{"operations": ops}, http.StatusOK)

	want := func(u tenant.Usage, messages int64) bool {
		return u.PushRequests >= 11 && u.MessagesIn == messages && u.DuplicatesIn == 50 && u.MessagesOut == 952 &&
			u.Acks == 952 && u.BytesIn == bytesIn && u.PopRequests == 7 && u.EmptyPops == 1
	}
	eventually(t, 5*time.Second, func() bool { return want(usageTotals(t, p, "acme", tenant.GranularityMinute), 952) },
		"minute totals: %+v (bytesIn %d)", usageTotals(t, p, "acme", tenant.GranularityMinute), bytesIn)
	minute := usageTotals(t, p, "acme", tenant.GranularityMinute)
	require.Equal(t, int64(952), minute.MessagesIn)
	require.Equal(t, minute.Counters(), usageTotals(t, p, "acme", tenant.GranularityHour).Counters())
	require.Equal(t, minute.Counters(), usageTotals(t, p, "acme", tenant.GranularityDay).Counters())
	require.Equal(t, tenant.Usage{}, usageTotals(t, p, "bob", tenant.GranularityMinute).Counters())

	t.Run("ProxyDatabaseOutage", func(t *testing.T) {
		restore := pgtest.CutOff(t, p.DBURL)
		// The cached key keeps working (its entry has expired: the lookup fails over
		// to it) and the counts wait in memory.
		eventually(t, 2*time.Second, func() bool {
			return call(t, http.MethodGet, p.URL+"/health/ready", "", nil).status == http.StatusServiceUnavailable
		}, "the outage is not seen")
		send(p, http.MethodPost, "/api/v1/push", pushBody("orders", 10, func(j int) string { return fmt.Sprintf("out-%d", j) }), http.StatusCreated)
		restore()
		eventually(t, 10*time.Second, func() bool { return want(usageTotals(t, p, "acme", tenant.GranularityMinute), 962) },
			"the outage's counts are lost: %+v", usageTotals(t, p, "acme", tenant.GranularityMinute))
	})

	// The other replica is a child process, stopped by SIGTERM as systemd stops it: its
	// counts, held for a minute, are flushed before it exits 0.
	t.Run("StopFlushes", func(t *testing.T) {
		other := proxytest.Exec(t, proxytest.Options{DBURL: p.DBURL, Backends: []string{b.broker.URL},
			Env: []string{"QUEEN_PROXY_USAGE_FLUSH_INTERVAL=1m"}})
		other.WaitBackends(t, "up", 10*time.Second)
		send(other, http.MethodPost, "/api/v1/push", pushBody("orders", 5, func(j int) string { return fmt.Sprintf("b-%d", j) }), http.StatusCreated)
		require.NoError(t, other.Stop())
		eventually(t, 2*time.Second, func() bool { return want(usageTotals(t, p, "acme", tenant.GranularityMinute), 967) },
			"the stopped replica's counts are lost: %+v", usageTotals(t, p, "acme", tenant.GranularityMinute))
	})
}
