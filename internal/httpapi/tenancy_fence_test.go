package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
)

// fenceSpread bounds how long a fence set (or lifted) through one broker takes to
// apply at another on the same database: brokers re-read the fence table every
// second; the rest is slack for a loaded test machine.
const fenceSpread = 3 * time.Second

// parkedPop is the outcome of a long-poll pop run off the test goroutine.
type parkedPop struct {
	status int
	err    error
}

// park starts a long-poll pop (wait=true, 60 s) of tenant's queue on c and returns
// where its outcome arrives.
func (c *cell) park(t *testing.T, tenant, queueName string) <-chan parkedPop {
	t.Helper()
	out := make(chan parkedPop, 1)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet,
		c.srv.URL+"/api/v1/pop/queue/"+queueName+"?wait=true&timeout=60000", nil)
	require.NoError(t, err)
	req.Header.Set("X-Queen-Tenant", tenant)
	go func() {
		resp, err := c.srv.Client().Do(req)
		if err != nil {
			out <- parkedPop{err: err}
			return
		}
		_ = resp.Body.Close()
		out <- parkedPop{status: resp.StatusCode}
	}()
	return out
}

// waitParked waits until n long-polls are parked on c.
func (c *cell) waitParked(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		a := c.call(t, "", http.MethodGet, "/api/v1/system/longpolls", nil)
		var l struct {
			Total int `json:"total"`
		}
		return a.status == http.StatusOK && json.Unmarshal(a.body, &l) == nil && l.Total == n
	}, 10*time.Second, 10*time.Millisecond, "%d long-poll(s) parked", n)
}

// ended requires the parked pop to have ended with its empty answer (204) by deadline.
func ended(t *testing.T, p <-chan parkedPop, deadline time.Time) {
	t.Helper()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case res := <-p:
		require.NoError(t, res.err)
		require.Equal(t, http.StatusNoContent, res.status, "a fenced parked pop answers empty")
	case <-timer.C:
		t.Fatalf("the parked pop has not ended by the deadline")
	}
}

// requireMoving requires a's answer to be the fence's: 503 tenant_moving, Retry-After 1.
func requireMoving(t *testing.T, a answer, what string) {
	t.Helper()
	require.Equal(t, http.StatusServiceUnavailable, a.status, "%s: %s", what, a.body)
	require.Equal(t, "1", a.header.Get("Retry-After"), what)
	body := a.object(t)
	require.Equal(t, "tenant_moving", body["code"], what)
	require.Equal(t, "tenant is being moved", body["error"], what)
}

// refusesWithin polls a cheap read of tenant's on c until it answers the fence's 503
// (fenced) or 200 (not fenced), failing after fenceSpread, and returns how long that
// took.
func (c *cell) refusesWithin(t *testing.T, tenant string, fenced bool) time.Duration {
	t.Helper()
	start := time.Now()
	want := http.StatusOK
	if fenced {
		want = http.StatusServiceUnavailable
	}
	var last answer
	require.Eventually(t, func() bool {
		last = c.call(t, tenant, http.MethodGet, "/api/v1/resources/queues", nil)
		return last.status == want
	}, fenceSpread, 10*time.Millisecond, "%s fenced=%v at %s within %s", tenant, fenced, c.srv.URL, fenceSpread)
	took := time.Since(start)
	if fenced {
		requireMoving(t, last, "a read at another broker")
	}
	return took
}

// snapshot is tenant's rows in the tables a push, pop or ack changes.
func (c *cell) snapshot(t *testing.T, tenant string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, tt := range stateTables[:4] { // queues, partitions, messages, partition_consumers
		out[tt.table] = c.rowsOf(t, tt, tenant)
	}
	return out
}

// TestTenantFenceRefusesTheTenantEverywhere: while acme is fenced, its push, pop and
// ack answer 503 tenant_moving (Retry-After: 1) and change nothing, and bob is served;
// the fence ends acme's parked long-polls with their empty answer, at once on the
// broker that set it (which says drained) and within fenceSpread on another broker of
// the database, which refuses acme from then on; a broker started while the fence is
// set refuses acme from its first request; lifting the fence serves acme everywhere
// again, and the lease taken before the fence acks.
func TestTenantFenceRefusesTheTenantEverywhere(t *testing.T) {
	t.Parallel()
	c1 := startCell(t, "")
	c2 := startCell(t, c1.srv.DBURL)
	for _, tenant := range []string{"acme", "bob"} {
		c1.push(t, tenant, "orders", "p1", tenant, 3)
		a := c1.call(t, tenant, http.MethodPost, "/api/v1/configure", map[string]any{"queue": "idle"})
		require.Equal(t, http.StatusOK, a.status, "configure: %s", a.body)
	}
	leased := c1.pop(t, "acme", "orders", "p1", 1)
	require.Len(t, leased, 1)
	parked1, parked2 := c1.park(t, "acme", "idle"), c2.park(t, "acme", "idle")
	c1.waitParked(t, 1)
	c2.waitParked(t, 1)
	before := c1.snapshot(t, "acme")
	require.NotEmpty(t, before["queen.messages"])

	start := time.Now()
	fence := c1.ok(t, http.MethodPost, "/internal/api/tenancy/fence", map[string]any{"tenant": "acme", "fenced": true})
	fencedAt := time.Now()
	require.Equal(t, map[string]any{"tenant": "acme", "fenced": true, "drained": true}, fence)
	ended(t, parked1, start.Add(2*time.Second))
	t.Logf("fence set at the first broker in %s", fencedAt.Sub(start))

	requireMoving(t, c1.call(t, "acme", http.MethodPost, "/api/v1/push", map[string]any{"items": []map[string]any{
		{"queue": "orders", "partition": "p1", "transactionId": "fenced-1", "payload": 1}}}), "push")
	requireMoving(t, c1.call(t, "acme", http.MethodGet, "/api/v1/pop/queue/orders/partition/p1?batch=10&wait=false", nil), "pop")
	requireMoving(t, c1.call(t, "acme", http.MethodGet, "/api/v1/pop/queue/idle?wait=true&timeout=30000", nil), "long-poll pop")
	requireMoving(t, c1.call(t, "acme", http.MethodPost, "/api/v1/ack", map[string]any{"transactionId": leased[0]["transactionId"],
		"partitionId": leased[0]["partitionId"], "leaseId": leased[0]["leaseId"], "status": "completed"}), "ack")

	c1.push(t, "bob", "orders", "p1", "bob-fenced", 2) // bob is served meanwhile
	bobMsgs := c1.pop(t, "bob", "orders", "p1", 10)
	require.Len(t, bobMsgs, 5)
	c1.ackAll(t, "bob", bobMsgs)

	ended(t, parked2, fencedAt.Add(fenceSpread))
	t.Logf("the second broker refuses acme %s after the fence", c2.refusesWithin(t, "acme", true)+time.Since(fencedAt))
	c3 := startCell(t, c1.srv.DBURL)
	requireMoving(t, c3.call(t, "acme", http.MethodPost, "/api/v1/push", map[string]any{"items": []map[string]any{
		{"queue": "orders", "partition": "p1", "transactionId": "fenced-2", "payload": 2}}}), "a late broker's first request")
	require.Equal(t, before, c1.snapshot(t, "acme"), "nothing of acme's changed while fenced")

	lift := c1.ok(t, http.MethodPost, "/internal/api/tenancy/fence", map[string]any{"tenant": "acme", "fenced": false})
	require.Equal(t, map[string]any{"tenant": "acme", "fenced": false, "drained": true}, lift)
	require.Equal(t, http.StatusOK, c1.call(t, "acme", http.MethodGet, "/api/v1/resources/queues", nil).status, "unfenced at once here")
	c2.refusesWithin(t, "acme", false)
	c3.refusesWithin(t, "acme", false)
	c2.ackAll(t, "acme", leased)
	c3.push(t, "acme", "orders", "p1", "after", 1)
	var rows int
	require.NoError(t, c1.db.QueryRow(t.Context(), `SELECT count(*) FROM queen.tenant_fences`).Scan(&rows))
	require.Zero(t, rows, "the fence row is gone")
}

// TestTenantRequestsWaitForTheFences: a broker with tenancy on that starts while its
// database is away answers every tenant request 503 unavailable (Retry-After: 1)
// until it has read the fence table, spooling none of them (a global push is
// spooled meanwhile); once it has, a tenant fenced before the boot is refused from
// the first request and another tenant is served.
func TestTenantRequestsWaitForTheFences(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDBURL(t)
	db, err := pgxpool.New(t.Context(), dbURL)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	_, err = db.Exec(t.Context(), `INSERT INTO queen.tenant_fences (tenant) VALUES ('acme')`)
	require.NoError(t, err)
	db.Close()
	restore := pgtest.CutOff(t, dbURL)
	srv := daemontest.Start(t, daemontest.Options{DBURL: dbURL, NoWait: true,
		Env: []string{"QUEEN_TENANCY_HEADER=X-Queen-Tenant", "LOG_LEVEL=error", "DB_POOL_SIZE=4"}})
	c := &cell{srv: srv}

	pushOne := func(tenant, txid string) answer {
		return c.call(t, tenant, http.MethodPost, "/api/v1/push", map[string]any{"items": []map[string]any{
			{"queue": "early", "transactionId": txid, "payload": 1}}})
	}
	a := pushOne("", "global-1")
	require.Equal(t, http.StatusCreated, a.status, "a global push is spooled: %s", a.body)
	require.Contains(t, string(a.body), `"buffered"`)
	for _, tenant := range []string{"acme", "bob"} {
		a := pushOne(tenant, tenant+"-early")
		require.Equal(t, http.StatusServiceUnavailable, a.status, "%s before the fences are read: %s", tenant, a.body)
		require.Equal(t, "1", a.header.Get("Retry-After"))
		require.Equal(t, "unavailable", a.object(t)["code"], "%s", a.body)
		require.NotContains(t, string(a.body), "buffered")
	}

	restore()
	require.Eventually(t, func() bool {
		return c.call(t, "", http.MethodGet, "/health/ready", nil).status == http.StatusOK
	}, daemontest.StartTimeout, 20*time.Millisecond, "ready once the database is back")
	requireMoving(t, pushOne("acme", "acme-1"), "the fenced tenant's first push")
	a = pushOne("bob", "bob-1")
	require.Equal(t, http.StatusCreated, a.status, "bob's push: %s", a.body)
	require.Contains(t, string(a.body), `"queued"`)

	c.db, err = pgxpool.New(t.Context(), dbURL)
	require.NoError(t, err)
	t.Cleanup(c.db.Close)
	require.Eventually(t, func() bool {
		a := c.call(t, "", http.MethodGet, "/api/v1/status/buffers", nil)
		var b struct {
			Pending int `json:"pending"`
		}
		var n int
		return a.status == http.StatusOK && json.Unmarshal(a.body, &b) == nil && b.Pending == 0 &&
			c.db.QueryRow(t.Context(), `SELECT count(*) FROM queen.messages WHERE transaction_id = 'global-1'`).Scan(&n) == nil && n == 1
	}, 30*time.Second, 20*time.Millisecond, "the spool replayed")
	var got []string
	rows, err := c.db.Query(t.Context(), `SELECT transaction_id FROM queen.messages ORDER BY transaction_id`)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		got = append(got, s)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"bob-1", "global-1"}, got, "only the pushes served are stored")
}

// TestFenceAnswersAClaimInProgress: a fence that reaches a pop while its claim runs
// ends its waiting, not its claim: the claim finishes and the pop is answered with its
// messages (the fence's drain waits for it), so no lease is left taken for an answer
// that was never sent, and the messages ack once the fence is lifted. The claim is
// held mid-way by the queue's registration lock, which a group's first wildcard pop
// takes exclusively.
func TestFenceAnswersAClaimInProgress(t *testing.T) {
	t.Parallel()
	c := startCell(t, "")
	c.push(t, "acme", "orders", "p1", "acme", 3)
	hold, err := c.db.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = hold.Rollback(context.Background()) }()
	_, err = hold.Exec(t.Context(), `SELECT pg_advisory_xact_lock_shared(queen.queue_consumers_key(q.id))
        FROM queen.queues q WHERE q.name = 'acme:orders'`)
	require.NoError(t, err)

	popReq, err := http.NewRequestWithContext(t.Context(), http.MethodGet,
		c.srv.URL+"/api/v1/pop/queue/orders?batch=10&wait=true&timeout=60000&consumerGroup=g1", nil)
	require.NoError(t, err)
	popReq.Header.Set("X-Queen-Tenant", "acme")
	popped := sendAsync(c.srv.Client(), popReq)
	require.Eventually(t, func() bool {
		var n int
		return c.db.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND NOT l.granted AND a.query LIKE '%pop_q4%'`).Scan(&n) == nil && n == 1
	}, 10*time.Second, 10*time.Millisecond, "the pop's claim waits for the registration lock")

	fenceReq, err := http.NewRequestWithContext(t.Context(), http.MethodPost, c.srv.URL+"/internal/api/tenancy/fence",
		strings.NewReader(`{"tenant":"acme","fenced":true}`))
	require.NoError(t, err)
	fenceReq.Header.Set("Content-Type", "application/json")
	fenced := sendAsync(c.srv.Client(), fenceReq)
	require.Eventually(t, func() bool {
		return c.call(t, "acme", http.MethodGet, "/api/v1/resources/queues", nil).status == http.StatusServiceUnavailable
	}, 10*time.Second, 10*time.Millisecond, "the fence applies")
	require.NoError(t, hold.Rollback(t.Context())) // the claim goes on

	pop := <-popped
	require.Equal(t, http.StatusOK, pop.status, "the claim in progress is answered: %s", pop.body)
	var res struct {
		Messages []map[string]any `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(pop.body, &res))
	require.Len(t, res.Messages, 3)
	fence := <-fenced
	require.Equal(t, http.StatusOK, fence.status, "%s", fence.body)
	require.JSONEq(t, `{"tenant":"acme","fenced":true,"drained":true}`, string(fence.body), "the drain waited for the pop")

	c.ok(t, http.MethodPost, "/internal/api/tenancy/fence", map[string]any{"tenant": "acme", "fenced": false})
	a := c.call(t, "acme", http.MethodPost, "/api/v1/ack/batch", map[string]any{"consumerGroup": "g1",
		"acknowledgments": []map[string]any{
			{"transactionId": res.Messages[0]["transactionId"], "partitionId": res.Messages[0]["partitionId"], "leaseId": res.Messages[0]["leaseId"], "status": "completed"},
			{"transactionId": res.Messages[1]["transactionId"], "partitionId": res.Messages[1]["partitionId"], "leaseId": res.Messages[1]["leaseId"], "status": "completed"},
			{"transactionId": res.Messages[2]["transactionId"], "partitionId": res.Messages[2]["partitionId"], "leaseId": res.Messages[2]["leaseId"], "status": "completed"},
		}})
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var lease *string
	require.NoError(t, c.db.QueryRow(t.Context(), `SELECT c.worker_id FROM queen.partition_consumers c
        WHERE c.consumer_group = 'acme:g1'`).Scan(&lease))
	require.Nil(t, lease, "the lease the pop took is released by its ack: %s", a.body)
}

// sendAsync sends req off the test goroutine and returns where its answer arrives (a
// transport error as the body, status 0).
func sendAsync(hc *http.Client, req *http.Request) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		resp, err := hc.Do(req)
		if err != nil {
			out <- answer{body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		out <- answer{status: resp.StatusCode, body: raw}
	}()
	return out
}
