package checker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
	"github.com/queenmq/queen/internal/pgtest"
)

// Sizes of TestStreamLoop: 6-12 s under -race on two cores.
const (
	loopMessages   = 3000
	loopPartitions = 50
	loopKeys       = 20
	loopWorkers    = 4
	loopMaxBatch   = 25
	loopRestarts   = 4    // alternately broker 1 (SIGKILL) and broker 0 (in process)
	loopLostAnswer = 0.10 // share of cycles sent twice, the first answer discarded
	loopLeaseTime  = 5    // seconds: a lease whose pop answer was lost must come back soon
	loopDeadline   = 3 * time.Minute
	loopRequest    = 30 * time.Second // bound of one POST
	loopPopWait    = 300 * time.Millisecond
)

// Routes of the SDKs' stream runtime.
const (
	routeStreamQueries = "/streams/v1/queries"
	routeStreamCycle   = "/streams/v1/cycle"
	routeStreamState   = "/streams/v1/state/get"
)

// TestStreamLoop runs a small stream pipeline the way the SDKs' Stream runtime does,
// against two brokers on one database that are restarted under it (one SIGKILLed),
// and with answers lost on purpose: workers pop a batch of one source partition with
// the query's consumer group, read the per-key counts of that partition's state, and
// commit in one cycle the new counts, one sink message per source message and the ack
// of the batch. Cycles are retried identically after transport errors and 5xx; a
// retry answered "already acknowledged" means an earlier attempt committed. In the
// end every source message was consumed once: the counts add up exactly, the sink
// holds one message per source message, the acks count every message once and the
// DLQ is empty.
func TestStreamLoop(t *testing.T) {
	t.Parallel()

	l := newStreamLoop(t)
	l.pushSource(t)
	l.register(t)
	l.run(t)
	l.verify(t)

	s := &l.stats
	t.Logf("stream loop: %d messages in %s: %d cycles (%d committed, %d already acknowledged on retry, "+
		"%d acknowledged by another worker, %d stale leases), %d retries (%d 5xx), %d lost answers, "+
		"%d state-read retries, %d pop errors, %d empty pops, %d restarts",
		loopMessages, time.Since(l.start).Round(time.Millisecond), s.cycles.Load(), s.committed.Load(),
		s.alreadyAcked.Load(), s.ackedByOther.Load(), s.staleLeases.Load(), s.retries.Load(), s.status5xx.Load(),
		s.lostAnswers.Load(), s.stateRetries.Load(), s.popErrors.Load(), s.emptyPops.Load(), s.restarts.Load())
	require.Positive(t, s.restarts.Load(), "brokers were restarted under the workers")
	require.Positive(t, s.lostAnswers.Load(), "answers were lost on purpose")
	require.Positive(t, s.alreadyAcked.Load(), "a retried cycle learned that an earlier attempt committed")
}

// streamLoop is the state of TestStreamLoop.
type streamLoop struct {
	cl      *cluster
	pool    *pgxpool.Pool
	clients []*client.Client
	start   time.Time

	name, src, sink, group string
	queryID                string

	// Filled by pushSource, read-only afterwards.
	keyOf        map[string]string // source transactionId → key
	want         map[string]int    // key → source messages
	partitionIDs []string          // source partitions

	stats loopStats

	mu       sync.Mutex // guards problems
	problems []string
	stopWork context.CancelFunc
}

// loopStats counts what the workers did and saw.
type loopStats struct {
	cycles       atomic.Int64 // cycles built (each sent until answered)
	committed    atomic.Int64 // cycles answered success
	progress     atomic.Int64 // messages known committed (paces the restarts)
	alreadyAcked atomic.Int64 // retries answered "already acknowledged"
	ackedByOther atomic.Int64 // first attempts answered "already acknowledged" (lease lost)
	staleLeases  atomic.Int64 // cycles refused for a stale lease (batch dropped)
	retriedStale atomic.Int64 // of those, retries (an earlier attempt may have committed)
	unresolved   atomic.Int64 // cycles in flight or unanswered when the work stopped (an attempt may have committed)
	retries      atomic.Int64 // cycle attempts repeated after no answer or a 5xx
	status5xx    atomic.Int64
	lostAnswers  atomic.Int64
	stateRetries atomic.Int64
	popErrors    atomic.Int64
	emptyPops    atomic.Int64
	restarts     atomic.Int64
}

// loopPayload is the payload of source messages (Key, N) and sink messages (Key, Source).
type loopPayload struct {
	Key    string `json:"key"`
	N      int    `json:"n,omitempty"`
	Source string `json:"source,omitempty"`
}

// loopCount is a state value.
type loopCount struct {
	Count int `json:"count"`
}

func newStreamLoop(t *testing.T) *streamLoop {
	t.Helper()
	dbURL := pgtest.NewDBURL(t)
	l := &streamLoop{cl: startCluster(t, dbURL), start: time.Now(),
		name: "loop", src: "loop.src", sink: "loop.sink", group: "streams.loop"}
	pool, err := pgxpool.New(t.Context(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	l.pool = pool
	for _, u := range l.cl.URLs() {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 2 * loopWorkers
		hc := &http.Client{Transport: tr}
		t.Cleanup(hc.CloseIdleConnections)
		l.clients = append(l.clients, client.New(u, client.WithHTTPClient(hc)))
	}
	return l
}

// pushSource configures the source queue and pushes the messages: each names one of
// loopKeys keys and goes to one of loopPartitions partitions, so a key spans many
// partitions and a partition holds many keys.
func (l *streamLoop) pushSource(t *testing.T) {
	ctx := t.Context()
	_, err := l.clients[0].Configure(ctx, api.ConfigureRequest{Queue: l.src,
		Options: &api.QueueOptions{LeaseTime: api.Int(loopLeaseTime)}})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	l.keyOf, l.want = make(map[string]string, loopMessages), make(map[string]int, loopKeys)
	partitionID := map[string]string{}
	items := make([]api.PushItem, 0, 100)
	flush := func() {
		res, err := l.clients[0].Push(ctx, items...)
		require.NoError(t, err)
		require.Len(t, res, len(items))
		for i, r := range res {
			require.Equal(t, api.PushStatusQueued, r.Status, "push of %s", items[i].TransactionID)
			if id, ok := partitionID[items[i].Partition]; ok {
				require.Equal(t, id, r.PartitionID, "partition %s", items[i].Partition)
			}
			partitionID[items[i].Partition] = r.PartitionID
		}
		items = items[:0]
	}
	for i := range loopMessages {
		txID, key := fmt.Sprintf("src-%05d", i), fmt.Sprintf("k%02d", rng.IntN(loopKeys))
		l.keyOf[txID] = key
		l.want[key]++
		payload, err := json.Marshal(loopPayload{Key: key, N: i})
		require.NoError(t, err)
		items = append(items, api.PushItem{Queue: l.src, Partition: fmt.Sprintf("p%02d", rng.IntN(loopPartitions)),
			TransactionID: txID, Payload: payload})
		if len(items) == cap(items) {
			flush()
		}
	}
	if len(items) > 0 {
		flush()
	}
	l.partitionIDs = slices.Sorted(maps.Values(partitionID))
	require.Len(t, l.partitionIDs, loopPartitions)
}

func (l *streamLoop) register(t *testing.T) {
	var res api.StreamQueryResponse
	_, err := l.clients[1].Do(t.Context(), http.MethodPost, routeStreamQueries, api.StreamQueryRequest{
		Name: l.name, SourceQueue: l.src, SinkQueue: l.sink, ConfigHash: "count-by-key-v1"}, &res)
	require.NoError(t, err)
	require.True(t, res.Success)
	require.True(t, res.Fresh)
	require.NotEmpty(t, res.QueryID)
	l.queryID = res.QueryID
}

// run starts the workers and the restarter and returns once every source message was
// consumed and the restarter is done (or on a problem, or at the deadline).
func (l *streamLoop) run(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), loopDeadline)
	defer cancel()
	workCtx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	l.stopWork = stopWork

	var done atomic.Bool
	var restarter, workers sync.WaitGroup
	restarter.Go(func() { l.restart(ctx, t, &done) })
	for i := range loopWorkers {
		w := &loopWorker{l: l, rng: rand.New(rand.NewPCG(3, uint64(i)))}
		workers.Go(func() { w.run(workCtx) })
	}

	consumed, err := l.pollConsumed(workCtx)
	done.Store(true)
	restarter.Wait()
	stopWork()
	workers.Wait()
	l.mu.Lock()
	problems := l.problems
	l.mu.Unlock()
	require.Empty(t, problems, "problems seen by the workers")
	require.NoError(t, err, "waiting for every source message to be consumed")
	require.Equal(t, loopMessages, consumed, "source messages consumed by %s", l.group)
}

// pollConsumed polls until the group's cursors have passed every source message.
func (l *streamLoop) pollConsumed(ctx context.Context) (int, error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var n int
		err := l.pool.QueryRow(ctx, `
			SELECT count(*) FROM queen.messages m
			JOIN queen.partitions p ON p.id = m.partition_id
			JOIN queen.queues q ON q.id = p.queue_id
			JOIN queen.partition_consumers pc ON pc.partition_id = m.partition_id AND pc.consumer_group = $2
			WHERE q.name = $1 AND (m.created_at, m.id) <= (pc.last_consumed_created_at, pc.last_consumed_id)`,
			l.src, l.group).Scan(&n)
		if err == nil && n >= loopMessages {
			return n, nil
		}
		select {
		case <-ctx.Done():
			return n, fmt.Errorf("%d of %d consumed: %w (last query error: %v)", n, loopMessages, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// restart restarts the brokers in turn as the work progresses, until done.
func (l *streamLoop) restart(ctx context.Context, t *testing.T, done *atomic.Bool) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := range loopRestarts {
		for l.stats.progress.Load() < int64(loopMessages*(i+1)/(loopRestarts+2)) {
			if done.Load() {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		b := 1 - i%2
		t.Logf("stream loop: restarting broker %d at %s", b, time.Since(l.start).Round(time.Millisecond))
		if err := l.cl.Restart(ctx, b); err != nil {
			l.problem("restart broker %d: %v", b, err)
			return
		}
		l.stats.restarts.Add(1)
	}
}

// problem records something that must fail the test and stops the workers.
func (l *streamLoop) problem(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.problems = append(l.problems, fmt.Sprintf(format, args...))
	l.stopWork()
}

// post sends body to broker b. Status 0 means no answer (transport error, timeout).
func (l *streamLoop) post(ctx context.Context, b int, path string, body []byte, out any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, loopRequest)
	defer cancel()
	return l.clients[b].Do(ctx, http.MethodPost, path, json.RawMessage(body), out)
}

// postAnswered posts body to the brokers in turn, from broker first, until one answers
// (a connection kept from before a restart may fail once).
func (l *streamLoop) postAnswered(ctx context.Context, first int, path string, body []byte, out any) error {
	for attempt := 0; ; attempt++ {
		status, err := l.post(ctx, (first+attempt)%len(l.clients), path, body, out)
		if !loopRetryable(status) || attempt == 5 || ctx.Err() != nil {
			return err
		}
		loopPause(ctx, loopBackoff(attempt))
	}
}

// verify checks the outcome once the workers are gone.
func (l *streamLoop) verify(t *testing.T) {
	ctx := t.Context()
	var acked int
	require.NoError(t, l.pool.QueryRow(ctx, `
		SELECT coalesce(sum(pc.total_messages_consumed), 0) FROM queen.partition_consumers pc
		JOIN queen.partitions p ON p.id = pc.partition_id
		JOIN queen.queues q ON q.id = p.queue_id
		WHERE q.name = $1 AND pc.consumer_group = $2`, l.src, l.group).Scan(&acked))
	require.Equal(t, loopMessages, acked, "messages counted by the acks of committed cycles")

	got := map[string]int{}
	for i, pid := range l.partitionIDs {
		body, err := json.Marshal(api.StreamStateRequest{QueryID: l.queryID, PartitionID: pid})
		require.NoError(t, err)
		var res api.StreamStateResponse
		require.NoError(t, l.postAnswered(ctx, i, routeStreamState, body, &res))
		require.True(t, res.Success)
		for _, row := range res.Rows {
			var c loopCount
			require.NoError(t, json.Unmarshal(row.Value, &c), "state %s of partition %s: %s", row.Key, pid, row.Value)
			got[row.Key] += c.Count
		}
	}
	require.Equal(t, l.want, got, "per key, the state counts summed over partitions")

	// Each committed cycle was answered success, or learned on a retry that it had
	// committed (which, after a lease expired, may have been another worker's cycle),
	// or was retried and refused for a lease another worker holds by then, or was
	// still waiting for its retry when the work stopped.
	var cycles int64
	require.NoError(t, l.pool.QueryRow(ctx, `SELECT coalesce(sum(cycles), 0) FROM queen_streams.shards WHERE query_id = $1`,
		l.queryID).Scan(&cycles))
	committed := l.stats.committed.Load()
	require.GreaterOrEqual(t, cycles, committed, "cycles the shards counted")
	require.LessOrEqual(t, cycles, committed+l.stats.alreadyAcked.Load()+l.stats.retriedStale.Load()+l.stats.unresolved.Load(),
		"cycles the shards counted")

	l.verifySink(t)
	var dead int
	require.NoError(t, l.pool.QueryRow(ctx, `SELECT count(*) FROM queen.dead_letter_queue`).Scan(&dead))
	require.Zero(t, dead, "dead letters")
}

// verifySink requires one sink message per source message, in the key's partition.
func (l *streamLoop) verifySink(t *testing.T) {
	rows, err := l.pool.Query(t.Context(), `
		SELECT m.transaction_id, p.name, m.payload::text FROM queen.messages m
		JOIN queen.partitions p ON p.id = m.partition_id
		JOIN queen.queues q ON q.id = p.queue_id
		WHERE q.name = $1`, l.sink)
	require.NoError(t, err)
	defer rows.Close()
	seen := make(map[string]int, loopMessages)
	for rows.Next() {
		var txID, partition, payload string
		require.NoError(t, rows.Scan(&txID, &partition, &payload))
		seen[txID]++
		key, ok := l.keyOf[txID]
		require.True(t, ok, "sink message %s names no source message", txID)
		var p loopPayload
		require.NoError(t, json.Unmarshal([]byte(payload), &p))
		require.Equal(t, loopPayload{Key: key, Source: txID}, p, "payload of sink message %s", txID)
		require.Equal(t, key, partition, "partition of sink message %s", txID)
	}
	require.NoError(t, rows.Err())
	for txID := range l.keyOf {
		require.Equal(t, 1, seen[txID], "sink messages for source message %s", txID)
	}
	require.Len(t, seen, loopMessages)
}

// loopWorker is one stream worker; it picks a random broker for every request.
type loopWorker struct {
	l   *streamLoop
	rng *rand.Rand
}

func (w *loopWorker) run(ctx context.Context) {
	for ctx.Err() == nil {
		if msgs, leaseID := w.pop(ctx); len(msgs) > 0 {
			w.process(ctx, msgs, leaseID)
		}
	}
}

func (w *loopWorker) broker() int { return w.rng.IntN(len(w.l.clients)) }

// pop long-polls one batch of one source partition; nothing on an empty answer or an
// error, after a pause when the answer came at once (no hot loop).
func (w *loopWorker) pop(ctx context.Context) ([]api.Message, string) {
	l := w.l
	sent := time.Now()
	res, err := l.clients[w.broker()].Pop(ctx, client.PopOptions{Queue: l.src, ConsumerGroup: l.group,
		Batch: 1 + w.rng.IntN(loopMaxBatch), Wait: true, Timeout: loopPopWait})
	switch {
	case ctx.Err() != nil:
		return nil, ""
	case err != nil && loopRetryable(client.StatusCode(err)):
		l.stats.popErrors.Add(1)
		loopPause(ctx, 50*time.Millisecond)
		return nil, ""
	case err != nil:
		l.problem("pop refused: %v", err)
		return nil, ""
	case len(res.Messages) == 0:
		l.stats.emptyPops.Add(1)
		if time.Since(sent) < loopPopWait/2 {
			loopPause(ctx, 50*time.Millisecond)
		}
		return nil, ""
	case res.LeaseID == "":
		l.problem("pop answered %d messages without a leaseId", len(res.Messages))
		return nil, ""
	}
	return res.Messages, res.LeaseID
}

// process runs one cycle for a popped batch: read the counts of the batch's keys in
// its partition, then commit the new counts, the sink messages and the ack.
func (w *loopWorker) process(ctx context.Context, msgs []api.Message, leaseID string) {
	l := w.l
	pid := msgs[0].PartitionID
	inBatch := map[string]int{}
	for _, m := range msgs {
		var p loopPayload
		key, known := l.keyOf[m.TransactionID]
		switch {
		case !known:
			l.problem("pop delivered message %s (transactionId %q) that was never pushed", m.ID, m.TransactionID)
			return
		case json.Unmarshal(m.Data, &p) != nil || p.Key != key:
			l.problem("message %s delivered with payload %s, want key %s", m.TransactionID, m.Data, key)
			return
		case m.PartitionID != pid || m.LeaseID != leaseID:
			l.problem("one pop of one partition delivered %s from partition %s under lease %q, %s from %s under %q",
				msgs[0].TransactionID, pid, leaseID, m.TransactionID, m.PartitionID, m.LeaseID)
			return
		}
		inBatch[key]++
	}
	keys := slices.Sorted(maps.Keys(inBatch))
	counts, ok := w.readCounts(ctx, pid, keys)
	if !ok {
		return
	}
	body, err := json.Marshal(l.cycleRequest(msgs, leaseID, keys, counts, inBatch))
	if err != nil {
		l.problem("encode cycle: %v", err)
		return
	}
	l.stats.cycles.Add(1)
	if w.cycle(ctx, body, len(msgs)) {
		l.stats.progress.Add(int64(len(msgs)))
	}
}

func (l *streamLoop) cycleRequest(msgs []api.Message, leaseID string, keys []string, counts, inBatch map[string]int) api.StreamCycleRequest {
	n, release := int64(len(msgs)), true
	req := api.StreamCycleRequest{QueryID: l.queryID, PartitionID: msgs[0].PartitionID, ConsumerGroup: l.group,
		StateOps: make([]api.StreamStateOp, 0, len(keys)), PushItems: make([]api.PushItem, 0, len(msgs)),
		Ack: &api.StreamAck{TransactionID: msgs[len(msgs)-1].TransactionID, LeaseID: leaseID,
			Status: api.AckStatusCompleted, Count: &n},
		ReleaseLease: &release}
	for _, k := range keys {
		v, _ := json.Marshal(loopCount{Count: counts[k] + inBatch[k]})
		req.StateOps = append(req.StateOps, api.StreamStateOp{Type: "upsert", Key: k, Value: v})
	}
	for _, m := range msgs {
		key := l.keyOf[m.TransactionID]
		p, _ := json.Marshal(loopPayload{Key: key, Source: m.TransactionID})
		req.PushItems = append(req.PushItems, api.PushItem{Queue: l.sink, Partition: key, Payload: p,
			TransactionID: m.TransactionID})
	}
	return req
}

// readCounts reads the counts of keys in partition pid, retrying until answered.
func (w *loopWorker) readCounts(ctx context.Context, pid string, keys []string) (map[string]int, bool) {
	l := w.l
	body, err := json.Marshal(api.StreamStateRequest{QueryID: l.queryID, PartitionID: pid, Keys: keys})
	if err != nil {
		l.problem("encode state read: %v", err)
		return nil, false
	}
	for attempt := 0; ; attempt++ {
		var res api.StreamStateResponse
		status, err := l.post(ctx, w.broker(), routeStreamState, body, &res)
		switch {
		case ctx.Err() != nil:
			return nil, false
		case loopRetryable(status):
			l.stats.stateRetries.Add(1)
			loopPause(ctx, loopBackoff(attempt))
			continue
		case err != nil || !res.Success:
			l.problem("state read %s answered HTTP %d: %v %s", body, status, err, res.Error)
			return nil, false
		}
		counts := make(map[string]int, len(res.Rows))
		for _, row := range res.Rows {
			var c loopCount
			if err := json.Unmarshal(row.Value, &c); err != nil || !slices.Contains(keys, row.Key) {
				l.problem("state read %s answered row %s = %s", body, row.Key, row.Value)
				return nil, false
			}
			counts[row.Key] = c.Count
		}
		return counts, true
	}
}

// cycle sends one cycle until it is answered, as the SDKs do: the identical request
// again after no answer or a 5xx. Sometimes the first answer is discarded on purpose
// and the request sent again. It reports whether the cycle (this attempt or an
// earlier one) committed.
func (w *loopWorker) cycle(ctx context.Context, body []byte, n int) bool {
	l := w.l
	retried := false
	var lost *api.StreamCycleResponse // the discarded answer, when it was a 200
	if w.rng.Float64() < loopLostAnswer {
		l.stats.lostAnswers.Add(1)
		var res api.StreamCycleResponse
		if status, err := l.post(ctx, w.broker(), routeStreamCycle, body, &res); status == http.StatusOK && err == nil {
			lost = &res
		}
		retried = true
	}
	for attempt := 0; ; attempt++ {
		var res api.StreamCycleResponse
		status, err := l.post(ctx, w.broker(), routeStreamCycle, body, &res)
		switch {
		case ctx.Err() != nil:
			// The work stopped (every message consumed) while this cycle was in
			// flight or waited to be retried: an unanswered attempt may be the
			// commit that finished the work, its answer cut off by the stop.
			l.stats.unresolved.Add(1)
			return false
		case loopRetryable(status):
			if status != 0 {
				l.stats.status5xx.Add(1)
			}
			l.stats.retries.Add(1)
			retried = true
			loopPause(ctx, loopBackoff(attempt))
			continue
		case err != nil:
			l.problem("cycle %s answered HTTP %d: %v", body, status, err)
			return false
		}
		if lost != nil && lost.Success && (res.Success || !strings.Contains(res.Error, "already acknowledged")) {
			l.problem("cycle %s committed (answer discarded), then sent again and answered %+v", body, res)
			return false
		}
		return w.outcome(body, n, retried, res)
	}
}

// outcome classifies a 200 answer to a cycle.
func (w *loopWorker) outcome(body []byte, n int, retried bool, res api.StreamCycleResponse) bool {
	l := w.l
	switch {
	case res.Success:
		l.stats.committed.Add(1)
		if len(res.PushResults) != n || res.AckResult == nil || !res.AckResult.Success || res.AckResult.Count != int64(n) {
			l.problem("cycle %s committed with answer %+v", body, res)
			return true
		}
		for _, p := range res.PushResults {
			if p.Status != api.PushStatusQueued {
				// The sink message of this source message exists already: an earlier
				// committed cycle processed it, and its count was applied twice.
				l.problem("cycle %s committed, but its push of %s answered %q", body, p.TransactionID, p.Status)
			}
		}
		return true
	case strings.Contains(res.Error, "already acknowledged") && retried:
		l.stats.alreadyAcked.Add(1)
		return true
	case strings.Contains(res.Error, "already acknowledged"):
		// The lease expired under this worker and another one committed the batch.
		l.stats.ackedByOther.Add(1)
		return false
	case strings.Contains(res.Error, "lease"):
		l.stats.staleLeases.Add(1) // the batch comes back when the lease expires
		if retried {
			// An earlier attempt may have committed, released the lease, and another
			// worker leased the partition since: the retry cannot learn which.
			l.stats.retriedStale.Add(1)
		}
		return false
	}
	l.problem("cycle %s refused: %+v", body, res)
	return false
}

// loopRetryable: no answer (status 0) or a 5xx.
func loopRetryable(status int) bool { return status == 0 || status >= 500 }

// loopBackoff is the delay before retry attempt+1: 50 ms doubling to at most 800 ms.
func loopBackoff(attempt int) time.Duration {
	return 50 * time.Millisecond << min(attempt, 4)
}

// loopPause waits d or until ctx ends.
func loopPause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
