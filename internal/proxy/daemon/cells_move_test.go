package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// loadClient is the proxy's public port with one tenant key, for goroutines that
// must not call t.FailNow: every call returns its error.
type loadClient struct {
	base, key string
	client    *http.Client
	// slowest is the longest call in nanoseconds: the pause a client saw.
	slowest atomic.Int64
}

func (c *loadClient) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if d := time.Since(start).Nanoseconds(); d > c.slowest.Load() && !bytes.Contains([]byte(path), []byte("wait=true")) {
		c.slowest.Store(d) // parked pops wait by design; they are not a pause
	}
	return resp.StatusCode, raw, err
}

// seen is what one consumer group received: per partition, the sequence numbers in
// the order they arrived.
type seen struct {
	mu     sync.Mutex
	byPart map[string][]int
	// empty and broken count the pops answered 204 and the pops that got no answer;
	// lastErr is the last of the latter. They explain a group that stopped short.
	empty, broken atomic.Int64
	lastErr       atomic.Value
}

func (s *seen) add(part string, seq int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byPart[part] = append(s.byPart[part], seq)
}

// count returns how many distinct sequences arrived and how many arrived again, and
// how many arrived after a larger one of their partition (out of order).
func (s *seen) count() (distinct, dup, outOfOrder int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, seqs := range s.byPart {
		got := map[int]bool{}
		last := -1
		for _, q := range seqs {
			if got[q] {
				dup++
				continue
			}
			got[q] = true
			if q < last {
				outOfOrder++
			}
			last = max(last, q)
		}
		distinct += len(got)
	}
	return distinct, dup, outOfOrder
}

// TestMoveATenantUnderLoad moves acme from cell default to cell two while 4
// producers push through two proxy replicas (each to a partition of its own,
// numbered in order, kept at most a bounded backlog ahead of the consumers) and 2
// consumer groups pop and ack: every message arrives exactly once in each group, in
// order per partition, every ack item succeeds, the source cell's database keeps
// nothing of acme and the target holds every message. The longest client call during
// the run is the pause a client saw.
func TestMoveATenantUnderLoad(t *testing.T) {
	c := setupCells(t)
	var out map[string]any
	require.Equal(t, http.StatusCreated, c.proxy.Admin(t, http.MethodPost, "/admin/v1/tenants", map[string]any{"id": "acme",
		"cell": "default", "limits": map[string]any{"requestsPerSecond": 100000, "requestsBurst": 100000,
			"messagesPerSecond": 1000000, "messagesBurst": 1000000}}, &out), "%v", out)
	key := createKey(t, c.proxy, "acme", "write")
	// A second proxy replica on the same database: half the clients go through it.
	second := proxytest.Start(t, proxytest.Options{Backends: []string{c.broker[0].URL}, DBURL: c.proxy.DBURL})
	second.WaitBackends(t, "up", 10*time.Second)
	httpc := &http.Client{Timeout: 60 * time.Second}
	clients := []*loadClient{{base: c.proxy.URL, key: key.Key, client: httpc}, {base: second.URL, key: key.Key, client: httpc}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	const producers, batch = 4, 10
	var pushed [producers]atomic.Int64
	var failures sync.Map // what went wrong, by kind, for the report
	fail := func(kind string, err error) { failures.Store(kind, err) }
	t.Cleanup(func() {
		if t.Failed() {
			failures.Range(func(k, v any) bool { t.Logf("%s failed: %v", k, v); return true })
		}
	})
	groups := map[string]*seen{"g1": {byPart: map[string][]int{}}, "g2": {byPart: map[string][]int{}}}
	total := func() int64 {
		var n int64
		for i := range pushed {
			n += pushed[i].Load()
		}
		return n
	}
	// The producers keep the slowest group at most maxBacklog messages behind, so
	// that draining what is left after the pushes stop takes seconds on a slow
	// machine; consumed wakes a producer waiting for the groups.
	const maxBacklog = 2000
	consumed := make(chan struct{}, 1)
	backlog := func() int64 {
		least := int64(math.MaxInt64)
		for _, s := range groups {
			d, _, _ := s.count()
			least = min(least, int64(d))
		}
		return total() - least
	}
	stopPush := make(chan struct{})
	var wg, consumers sync.WaitGroup
	for p := range producers {
		lc := clients[p%2]
		wg.Go(func() {
			part := fmt.Sprintf("p%d", p)
			for seq := 0; ; seq += batch {
				for backlog() > maxBacklog {
					select {
					case <-stopPush:
						return
					case <-consumed:
					}
				}
				select {
				case <-stopPush:
					return
				default:
				}
				items := make([]map[string]any, batch)
				for i := range items {
					items[i] = map[string]any{"queue": "orders", "partition": part,
						"transactionId": fmt.Sprintf("%s-%d", part, seq+i), "payload": map[string]any{"p": part, "s": seq + i}}
				}
				status, body, err := lc.do(ctx, http.MethodPost, "/api/v1/push", map[string]any{"items": items})
				if err != nil || status != http.StatusCreated {
					fail("push", fmt.Errorf("status %d %s: %v", status, body, err))
					return
				}
				pushed[p].Store(int64(seq + batch))
			}
		})
	}
	var ackFailures atomic.Int64
	for i, g := range []string{"g1", "g2"} {
		s, lc := groups[g], clients[i]
		consumers.Go(func() {
			for ctx.Err() == nil {
				status, body, err := lc.do(ctx, http.MethodGet,
					"/api/v1/pop/queue/orders?batch=20&wait=true&timeout=500&consumerGroup="+g, nil)
				if err != nil {
					s.broken.Add(1)
					s.lastErr.Store(err.Error())
					continue
				}
				if status == http.StatusNoContent {
					s.empty.Add(1)
					continue
				}
				if status != http.StatusOK {
					fail("pop "+g, fmt.Errorf("status %d %s", status, body))
					continue
				}
				var pop api.PopResponse
				if err := json.Unmarshal(body, &pop); err != nil {
					fail("pop "+g, err)
					continue
				}
				acks := make([]map[string]any, 0, len(pop.Messages))
				for _, m := range pop.Messages {
					var pl struct {
						P string `json:"p"`
						S int    `json:"s"`
					}
					_ = json.Unmarshal(m.Data, &pl)
					s.add(pl.P, pl.S)
					select {
					case consumed <- struct{}{}:
					default:
					}
					lease := m.LeaseID
					if lease == "" {
						lease = pop.LeaseID
					}
					acks = append(acks, map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID,
						"leaseId": lease, "status": "completed"})
				}
				status, body, err = lc.do(ctx, http.MethodPost, "/api/v1/ack/batch",
					map[string]any{"acknowledgments": acks, "consumerGroup": g})
				if ctx.Err() != nil {
					return // the test is over: every message had arrived
				}
				if err != nil || status != http.StatusOK {
					ackFailures.Add(1)
					fail("ack "+g, fmt.Errorf("status %d %s: %v", status, body, err))
					continue
				}
				// An item refused inside a 200 leaves its partition leased until the
				// lease expires: the group would stall there.
				var results []api.AckResult
				if err := json.Unmarshal(body, &results); err != nil {
					fail("ack "+g, err)
					continue
				}
				for _, res := range results {
					if !res.Success {
						ackFailures.Add(1)
						fail("ack item "+g, fmt.Errorf("%s refused in %s", res.TransactionID, body))
					}
				}
			}
		})
	}

	eventually(t, 20*time.Second, func() bool { return total() >= 400 }, "the producers never got going")
	var mv struct {
		ID    int64    `json:"id"`
		Phase string   `json:"phase"`
		Error string   `json:"error"`
		Pause *float64 `json:"pauseMs"`
	}
	require.Equal(t, http.StatusAccepted, c.proxy.Admin(t, http.MethodPost, "/admin/v1/tenants/acme/move",
		map[string]any{"cell": "two"}, &mv))
	eventually(t, 90*time.Second, func() bool {
		c.proxy.Admin(t, http.MethodGet, fmt.Sprintf("/admin/v1/moves/%d", mv.ID), nil, &mv)
		return mv.Phase == "done" || mv.Phase == "failed"
	}, "the move never ended")
	require.Equal(t, "done", mv.Phase, "move error: %s", mv.Error)
	atMove := total()
	eventually(t, 20*time.Second, func() bool { return total() >= atMove+200 }, "pushes stopped after the move")
	close(stopPush)
	wg.Wait()
	want := int(total())
	for g, s := range groups {
		// The groups drain the backlog at their own pace (slow under a loaded race
		// build): a group fails when it stops making progress, not when it is slow.
		received := func() int { d, _, _ := s.count(); return d }
		if !progressing(received, want, 30*time.Second) {
			reportStall(t, c.pg, g, s, pushed[:])
			t.Fatalf("group %s stopped at %d of %d messages for 30 s", g, received(), want)
		}
	}
	cancel()
	consumers.Wait()
	failures.Range(func(k, v any) bool { t.Errorf("%s failed: %v", k, v); return true })
	for g, s := range groups {
		d, dup, ooo := s.count()
		require.Equal(t, want, d, "group %s: lost messages", g)
		require.Zero(t, dup, "group %s: duplicates", g)
		require.Zero(t, ooo, "group %s: out of order", g)
	}
	require.Zero(t, ackFailures.Load())
	src, dst := storedQueues(t, c.pg[0]), storedQueues(t, c.pg[1])
	require.NotContains(t, src, "acme:orders", "the source keeps nothing of acme")
	require.Equal(t, want, dst["acme:orders"], "the target holds every message once")
	require.NotNil(t, mv.Pause)
	t.Logf("moved under load through two proxy replicas: %d messages, pause %.1f ms, slowest client call %.1f ms",
		want, *mv.Pause, float64(max(clients[0].slowest.Load(), clients[1].slowest.Load()))/1e6)
}

// TestMoveResumesOnAnotherReplica: a move whose replica stops (here while the target
// cell cannot be reached, so the move is stuck copying) is taken over by another
// replica once its lease expires and finishes there; the cursor and the lease in
// flight it carried work at the target.
func TestMoveResumesOnAnotherReplica(t *testing.T) {
	var pg [2]*pgtest.Cluster
	var brokers [2]*daemontest.Server
	for i := range pg {
		pg[i] = pgtest.StartCluster(t)
		brokers[i] = proxytest.StartBroker(t, daemontest.Options{DBURL: pg[i].URL()})
	}
	first := proxytest.Start(t, proxytest.Options{Backends: []string{brokers[0].URL}})
	first.WaitBackends(t, "up", 10*time.Second)
	var out map[string]any
	require.Equal(t, http.StatusCreated, first.Admin(t, http.MethodPost, "/admin/v1/cells",
		map[string]any{"name": "two", "upstreams": []string{"http://127.0.0.1:9"}}, &out), "%v", out)
	createTenantIn(t, first, "acme", "default")
	key := createKey(t, first, "acme", "write")
	r := call(t, http.MethodPost, first.URL+"/api/v1/push", key.Key, pushBody("orders", 50, func(i int) string { return fmt.Sprintf("m%02d", i) }))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	pop := func(p *proxytest.Proxy, n int) api.PopResponse {
		r := call(t, http.MethodGet, fmt.Sprintf("%s/api/v1/pop/queue/orders?batch=%d&wait=false&consumerGroup=g1", p.URL, n), key.Key, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var res api.PopResponse
		r.json(t, &res)
		return res
	}
	ack := func(p *proxytest.Proxy, res api.PopResponse) {
		acks := make([]map[string]any, len(res.Messages))
		for i, m := range res.Messages {
			acks[i] = map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": res.LeaseID, "status": "completed"}
		}
		r := call(t, http.MethodPost, p.URL+"/api/v1/ack/batch", key.Key, map[string]any{"acknowledgments": acks, "consumerGroup": "g1"})
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var results []map[string]any
		r.json(t, &results)
		for _, x := range results {
			require.Equal(t, true, x["success"], "%s", r.body)
		}
	}
	ack(first, pop(first, 10))
	inFlight := pop(first, 5)
	require.Len(t, inFlight.Messages, 5)

	var mv struct {
		ID    int64  `json:"id"`
		Phase string `json:"phase"`
		Error string `json:"error"`
	}
	require.Equal(t, http.StatusAccepted, first.Admin(t, http.MethodPost, "/admin/v1/tenants/acme/move", map[string]any{"cell": "two"}, &mv))
	eventually(t, 20*time.Second, func() bool {
		first.Admin(t, http.MethodGet, fmt.Sprintf("/admin/v1/moves/%d", mv.ID), nil, &mv)
		return mv.Error != ""
	}, "the move never tried the unreachable cell")
	require.Equal(t, "copying", mv.Phase)
	require.NoError(t, first.Stop())

	second := proxytest.Start(t, proxytest.Options{Backends: []string{brokers[0].URL}, DBURL: first.DBURL})
	require.Equal(t, http.StatusOK, second.Admin(t, http.MethodPatch, "/admin/v1/cells/two",
		map[string]any{"upstreams": []string{brokers[1].URL}}, &out), "%v", out)
	eventually(t, 60*time.Second, func() bool {
		second.Admin(t, http.MethodGet, fmt.Sprintf("/admin/v1/moves/%d", mv.ID), nil, &mv)
		return mv.Phase == "done" || mv.Phase == "failed"
	}, "the second replica never finished the move")
	require.Equal(t, "done", mv.Phase, "%s", mv.Error)

	ack(second, inFlight) // the lease taken at the source is honoured by the target
	rest := pop(second, 100)
	require.Len(t, rest.Messages, 35, "the cursor and the acked lease were carried: nothing twice, nothing skipped")
	for _, m := range rest.Messages {
		require.GreaterOrEqual(t, m.TransactionID, "m15")
	}
	require.NotContains(t, storedQueues(t, pg[0]), "acme:orders")
	require.Equal(t, 50, storedQueues(t, pg[1])["acme:orders"])
}

// TestMoveCancelled: a move cancelled before its switch ends failed ("cancelled"),
// and the tenant stays where it was, served.
func TestMoveCancelled(t *testing.T) {
	c := setupCells(t)
	// Cell three cannot be reached: the move stays in its copy until cancelled.
	mv := moveToUnreachableCell(t, c, "acme")
	key := createKey(t, c.proxy, "acme", "write")
	cancelMove(t, c, mv)
	var tn map[string]any
	c.proxy.Admin(t, http.MethodGet, "/admin/v1/tenants/acme", nil, &tn)
	require.Equal(t, "default", tn["cell"])
	require.Nil(t, tn["move"])
	r := call(t, http.MethodPost, c.proxy.URL+"/api/v1/push", key.Key, pushBody("orders", 1, nil))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.Equal(t, 1, storedQueues(t, c.pg[0])["acme:orders"])
}

// TestMoveResumesInItsPause: a move left in its pause (phase final, the source
// fenced) by a replica that stopped is resumed by the next replica to start: the
// fence is set again, the copy finished, the tenant switched, and the cursor carried.
func TestMoveResumesInItsPause(t *testing.T) {
	c := setupCells(t)
	createTenantIn(t, c.proxy, "acme", "default")
	key := createKey(t, c.proxy, "acme", "write")
	r := call(t, http.MethodPost, c.proxy.URL+"/api/v1/push", key.Key, pushBody("orders", 20, func(i int) string { return fmt.Sprintf("m%02d", i) }))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	r = call(t, http.MethodGet, c.proxy.URL+"/api/v1/pop/queue/orders?batch=5&wait=false&autoAck=true&consumerGroup=g1", key.Key, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.NoError(t, c.proxy.Stop())

	// What a replica leaves when it stops in the pause: the phase, its expired lease,
	// and the source's brokers fenced.
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, c.proxy.DBURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var id int64
	require.NoError(t, conn.QueryRow(ctx, `INSERT INTO queen_proxy.tenant_moves
		(tenant_id, from_cell, to_cell, phase, progress, owner, owner_until, pause_epoch, paused_at)
		VALUES ('acme', 'default', 'two', 'final', '{"rounds":1,"pauses":1}', 'gone', now() - interval '1 second', 1, now())
		RETURNING id`).Scan(&id))
	r = call(t, http.MethodPost, c.broker[0].URL+"/internal/api/tenancy/fence", "", map[string]any{"tenant": "acme", "fenced": true})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	next := proxytest.Start(t, proxytest.Options{Backends: []string{c.broker[0].URL}, DBURL: c.proxy.DBURL})
	var mv struct {
		Phase string   `json:"phase"`
		Error string   `json:"error"`
		Pause *float64 `json:"pauseMs"`
	}
	eventually(t, 60*time.Second, func() bool {
		next.Admin(t, http.MethodGet, fmt.Sprintf("/admin/v1/moves/%d", id), nil, &mv)
		return mv.Phase == "done" || mv.Phase == "failed"
	}, "the move left in its pause never ended")
	require.Equal(t, "done", mv.Phase, "%s", mv.Error)
	require.NotNil(t, mv.Pause)
	r = call(t, http.MethodGet, next.URL+"/api/v1/pop/queue/orders?batch=100&wait=false&consumerGroup=g1", key.Key, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var rest api.PopResponse
	r.json(t, &rest)
	require.Len(t, rest.Messages, 15, "the cursor was carried")
	require.Equal(t, "m05", rest.Messages[0].TransactionID)
	require.NotContains(t, storedQueues(t, c.pg[0]), "acme:orders")
	require.Equal(t, 20, storedQueues(t, c.pg[1])["acme:orders"])
}

// progressing polls n every 20 ms until it reaches want (true), or returns false
// once n has stood still for idle.
func progressing(n func() int, want int, idle time.Duration) bool {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	last, since := n(), time.Now()
	for last < want {
		<-tick.C
		if cur := n(); cur != last {
			last, since = cur, time.Now()
		} else if time.Since(since) > idle {
			return false
		}
	}
	return true
}

// reportStall logs, for a group that stopped short, what each partition got against
// what was pushed and the group's cursor and lease rows in both cells.
func reportStall(t *testing.T, pg [2]*pgtest.Cluster, group string, s *seen, pushed []atomic.Int64) {
	t.Helper()
	s.mu.Lock()
	for p := range pushed {
		part := fmt.Sprintf("p%d", p)
		got := map[int]bool{}
		for _, q := range s.byPart[part] {
			got[q] = true
		}
		var missing []int
		for q := 0; q < int(pushed[p].Load()) && len(missing) < 10; q++ {
			if !got[q] {
				missing = append(missing, q)
			}
		}
		t.Logf("group %s partition %s: pushed %d, received %d distinct, first missing %v",
			group, part, pushed[p].Load(), len(got), missing)
	}
	s.mu.Unlock()
	d, dup, ooo := s.count()
	t.Logf("distinct %d dup %d ooo %d", d, dup, ooo)
	t.Logf("group %s: %d empty pops, %d pops without an answer (last: %v)", group, s.empty.Load(), s.broken.Load(), s.lastErr.Load())
	for i, cl := range pg {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn, err := pgx.Connect(ctx, cl.URL())
		if err != nil {
			t.Logf("cell %d: %v", i, err)
			cancel()
			continue
		}
		rows, err := conn.Query(ctx, `SELECT p.name, pc.last_consumed_created_at::text, coalesce(pc.lease_expires_at::text, ''),
				coalesce(pc.worker_id, ''), pc.batch_size, pc.acked_count, now()::text
			FROM queen.partition_consumers pc JOIN queen.partitions p ON p.id = pc.partition_id
			JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'acme:orders' AND pc.consumer_group = 'acme:' || $1`, group)
		if err == nil {
			for rows.Next() {
				var part, cursor, expires, worker, now string
				var size, acked int
				if err := rows.Scan(&part, &cursor, &expires, &worker, &size, &acked, &now); err == nil {
					t.Logf("cell %d %s: cursor %s, lease until %q (now %s) worker %q, batch %d acked %d",
						i, part, cursor, expires, now, worker, size, acked)
				}
			}
			err = rows.Err()
		}
		if err != nil {
			t.Logf("cell %d: %v", i, err)
		}
		conn.Close(ctx)
		cancel()
	}
}
