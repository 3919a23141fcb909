package checker_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
	"github.com/queenmq/queen/internal/patronitest"
	"github.com/queenmq/queen/internal/testwait"
)

// TestPostgresFailoverTimers' run: timersCount timers over timersPartitions partitions
// of timersQueue, scheduled timersBatch at a time, evenly over timersSchedule, due at
// offsets spread over timersDueSpan from the start (those due before their schedule
// are due at once), while the primary is killed at timersKillAt and a switchover
// follows once the cluster is healthy again.
const (
	timersQueue      = "timers-failover"
	timersCount      = 480
	timersPartitions = 6
	timersBatch      = 8
	timersSchedule   = 30 * time.Second
	timersDueSpan    = 40 * time.Second
	timersKillAt     = 4 * time.Second
	// timersLease is the destination queue's leaseTime (seconds): a pop whose answer
	// the failover cut is delivered again soon, not after the default 300 s.
	timersLease = 5
	// timersDrain bounds the wait, after the faults and the last schedule, for every
	// acknowledged timer to be delivered.
	timersDrain = 60 * time.Second
	// timersRequest bounds one schedule, ack or listing request.
	timersRequest = 15 * time.Second
	// timersRetry is the wait between two attempts of a request.
	timersRetry = 200 * time.Millisecond
)

// TestPostgresFailoverTimers checks that a timer fires exactly once across a
// PostgreSQL failover: on a Patroni pair (as TestPostgresFailover) with two brokers,
// timersCount timers are scheduled through both brokers (a batch answered 503 or not
// at all is sent again, to the other broker: scheduling is an upsert by key) while
// consumers long-poll the destination queue through both brokers and ack, and the
// primary is killed, then switched over, while timers are due and firing. Every
// timer whose schedule was answered 200 must be delivered, as exactly one message
// (one message id for its txn, stored once), the message id the answer named when
// the first attempt was answered; none may end dead-lettered or failing; a timer no
// schedule of which was answered was delivered at most once.
func TestPostgresFailoverTimers(t *testing.T) {
	pc := patronitest.Start(t, patronitest.Options{Nodes: 2})
	cl := startClusterEnv(t, brokerSettings(pc.Env()), 2)
	r := &timersRun{t: t, received: map[string][]string{}, acked: map[string]string{}, ambiguous: map[string]bool{}}
	for _, u := range cl.URLs() {
		r.clients = append(r.clients, client.New(u))
	}
	lease := timersLease
	_, err := r.clients[0].Configure(t.Context(), api.ConfigureRequest{Queue: timersQueue,
		Options: &api.QueueOptions{LeaseTime: &lease}})
	require.NoError(t, err)

	ctx, stop := context.WithCancel(t.Context())
	var consumers sync.WaitGroup
	for i := range 4 {
		consumers.Go(func() { r.consume(ctx, i%2) })
	}
	r.start = time.Now()
	scheduled := make(chan struct{})
	go func() {
		defer close(scheduled)
		r.schedule(ctx)
	}()
	defer func() { // also when the test fails early: no goroutine outlives it
		stop()
		consumers.Wait()
		<-scheduled
	}()

	var healthy atomic.Int64
	waitFor(ctx, r.start.Add(timersKillAt))
	for _, name := range []string{"kill-primary", "switchover"} {
		from := time.Since(r.start)
		require.NoError(t, failoverFault(t, pc, name, &healthy)(t.Context()), "fault %s", name)
		to := time.Since(r.start)
		due := 0
		for i := range timersCount {
			if d := timerDue(i); d >= from && d < to {
				due++
			}
		}
		t.Logf("timers: fault %s at %s..%s, %d timers due meanwhile", name, from.Round(time.Millisecond),
			to.Round(time.Millisecond), due)
	}
	<-scheduled

	var left []string
	testwait.For(t, timersDrain, 250*time.Millisecond, func() error {
		var err error
		left, err = r.pending(t.Context(), false)
		if err != nil {
			return err
		}
		return r.undelivered(left)
	})
	stop()
	consumers.Wait()
	r.verify(pc, left)
}

// timersRun is the state of TestPostgresFailoverTimers: what was scheduled and what
// the consumers received.
type timersRun struct {
	t       *testing.T
	clients []*client.Client
	start   time.Time

	mu        sync.Mutex
	acked     map[string]string   // timer key → message id of the last 200 answer
	ambiguous map[string]bool     // timer key → an attempt before the 200 may have applied
	received  map[string][]string // txn → message ids popped, redeliveries included
	disrupted int                 // schedule attempts answered 5xx or not at all
}

// timerKey, timerTxn and timerPartition name timer i and its message.
func timerKey(i int) string       { return fmt.Sprintf("k%04d", i) }
func timerTxn(key string) string  { return "txn-" + key }
func timerPartition(i int) string { return fmt.Sprintf("p%d", i%timersPartitions) }

// timerScheduled is when timer i is scheduled, from the start of the run (if its
// batch goes through at once).
func timerScheduled(i int) time.Duration {
	return timersSchedule * time.Duration(i/timersBatch*timersBatch) / timersCount
}

// timerDue is when timer i is due, from the start of the run: every tenth is due at
// once (delayMs 0), the others spread over timersDueSpan, not in schedule order, some
// of them before their schedule (a negative delayMs: due at once too).
func timerDue(i int) time.Duration {
	if i%10 == 0 {
		return timerScheduled(i)
	}
	return timersDueSpan * time.Duration(i*197%timersCount) / timersCount
}

// schedule schedules every timer, timersBatch per call, paced evenly over
// timersSchedule, alternating brokers.
func (r *timersRun) schedule(ctx context.Context) {
	for n := 0; n*timersBatch < timersCount; n++ {
		if !waitFor(ctx, r.start.Add(timerScheduled(n*timersBatch))) {
			return
		}
		var ops []map[string]any
		for i := n * timersBatch; i < min((n+1)*timersBatch, timersCount); i++ {
			delay := (timerDue(i) - time.Since(r.start)).Milliseconds()
			if i%10 == 0 {
				delay = 0
			}
			ops = append(ops, map[string]any{"op": "schedule", "queue": timersQueue, "timerKey": timerKey(i),
				"partition": timerPartition(i), "delayMs": delay, "txn": timerTxn(timerKey(i)),
				"payload": base64.StdEncoding.EncodeToString(fmt.Appendf(nil, `{"i":%d}`, i))})
		}
		if !r.scheduleBatch(ctx, n%2, ops) {
			return
		}
	}
}

// scheduleBatch sends ops until a broker answers 200, starting with broker b and
// alternating. It returns false when ctx ended first or the answer was refused.
func (r *timersRun) scheduleBatch(ctx context.Context, b int, ops []map[string]any) bool {
	for attempt := 0; ; attempt++ {
		var out struct {
			Results []struct {
				Status    string `json:"status"`
				TimerKey  string `json:"timerKey"`
				MessageID string `json:"messageId"`
			} `json:"results"`
		}
		reqCtx, cancel := context.WithTimeout(ctx, timersRequest)
		status, err := r.clients[(b+attempt)%2].Do(reqCtx, http.MethodPost, "/api/v1/timers",
			map[string]any{"operations": ops}, &out)
		cancel()
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, res := range out.Results {
				switch {
				case res.Status == "scheduled" || res.Status == "rescheduled":
				case res.Status == "too_late" && attempt > 0:
					// An unanswered attempt applied and a broker is firing the timer now:
					// it must be delivered like an acknowledged one.
				default:
					r.t.Errorf("timers: schedule of %s answered %q", res.TimerKey, res.Status)
					continue
				}
				r.acked[res.TimerKey] = res.MessageID
				r.ambiguous[res.TimerKey] = attempt > 0
			}
			return true
		}
		if status != 0 && status < http.StatusInternalServerError {
			r.t.Errorf("timers: schedule refused: %v", err)
			return false
		}
		r.mu.Lock()
		r.disrupted++
		r.mu.Unlock()
		if !sleepCtx(ctx, timersRetry) {
			return false
		}
	}
}

// consume long-polls the queue through broker b, records every message and acks it,
// until ctx ends. An ack that keeps failing lets the lease run out: the message is
// delivered again, which the verdict tells apart from a second message.
func (r *timersRun) consume(ctx context.Context, b int) {
	for ctx.Err() == nil {
		resp, err := r.clients[b].Pop(ctx, client.PopOptions{Queue: timersQueue, Batch: 16, Wait: true, Timeout: 2 * time.Second})
		if err != nil || len(resp.Messages) == 0 {
			if err != nil && !sleepCtx(ctx, timersRetry) {
				return
			}
			continue
		}
		req := api.AckBatchRequest{}
		r.mu.Lock()
		for _, m := range resp.Messages {
			r.received[m.TransactionID] = append(r.received[m.TransactionID], m.ID)
			req.Acknowledgments = append(req.Acknowledgments, api.AckItem{TransactionID: m.TransactionID,
				PartitionID: m.PartitionID, LeaseID: resp.LeaseID, Status: "completed"})
		}
		r.mu.Unlock()
		for attempt := 0; attempt < 20; attempt++ {
			reqCtx, cancel := context.WithTimeout(ctx, timersRequest)
			_, err := r.clients[(b+attempt)%2].AckBatch(reqCtx, req)
			cancel()
			if err == nil || !sleepCtx(ctx, timersRetry) {
				break
			}
		}
	}
}

// pendingTimer is a row of GET /api/v1/timers/{queue}.
type pendingTimer struct {
	TimerKey  string `json:"timerKey"`
	Attempts  int    `json:"attempts"`
	LastError string `json:"lastError"`
}

// pending lists the queue's pending timers (dead: its dead-lettered ones) as
// "key (attempts, lastError)", through either broker.
func (r *timersRun) pending(ctx context.Context, dead bool) ([]string, error) {
	var out []string
	after := ""
	for {
		q := url.Values{"limit": {"1000"}}
		if after != "" {
			q.Set("after", after)
		}
		if dead {
			q.Set("dead", "true")
		}
		var page struct {
			Rows      []pendingTimer `json:"rows"`
			Truncated bool           `json:"truncated"`
			NextAfter any            `json:"nextAfter"`
		}
		reqCtx, cancel := context.WithTimeout(ctx, timersRequest)
		_, err := r.clients[len(out)%2].Do(reqCtx, http.MethodGet, "/api/v1/timers/"+timersQueue+"?"+q.Encode(), nil, &page)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list timers: %w", err)
		}
		for _, row := range page.Rows {
			out = append(out, fmt.Sprintf("%s (attempts %d, lastError %q)", row.TimerKey, row.Attempts, row.LastError))
		}
		if !page.Truncated {
			return out, nil
		}
		after = fmt.Sprint(page.NextAfter)
	}
}

// undelivered reports the acknowledged timers still pending with a first attempt
// answered, or whose message no consumer received yet. A pending timer of a key with
// an earlier ambiguous attempt is allowed once its txn was delivered: that earlier
// attempt applied and fired, and the retry scheduled the key again, with a txn the
// partition already holds, so it can never be appended.
func (r *timersRun) undelivered(pending []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var missing []string
	for key := range r.acked {
		if len(r.received[timerTxn(key)]) == 0 {
			missing = append(missing, key)
		}
	}
	var waiting []string
	for _, p := range pending {
		key, _, _ := strings.Cut(p, " ")
		if !r.ambiguous[key] || len(r.received[timerTxn(key)]) == 0 {
			waiting = append(waiting, p)
		}
	}
	if len(missing)+len(waiting) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("%d of %d acknowledged timers not delivered (%v…); %d pending: %v",
			len(missing), len(r.acked), missing[:min(5, len(missing))], len(waiting), waiting[:min(5, len(waiting))])
	}
	return nil
}

// verify judges the run once every acknowledged timer was delivered; left is the
// queue's last list of pending timers.
func (r *timersRun) verify(pc *patronitest.Cluster, left []string) {
	t := r.t
	r.mu.Lock()
	defer r.mu.Unlock()
	stored := storedMessages(t, pc)
	var ambiguous, redelivered int
	for i := range timersCount {
		key := timerKey(i)
		ids := r.received[timerTxn(key)]
		distinct := slices.Compact(slices.Sorted(slices.Values(ids)))
		redelivered += len(ids) - len(distinct)
		id, ok := r.acked[key]
		if !ok {
			require.LessOrEqual(t, len(distinct), 1, "timer %s (no schedule answered) delivered as several messages: %v", key, distinct)
			continue
		}
		require.Len(t, distinct, 1, "timer %s: messages delivered for its txn", key)
		require.Equal(t, 1, stored[timerTxn(key)], "timer %s: messages stored with its txn", key)
		if r.ambiguous[key] {
			ambiguous++
			continue
		}
		require.Equal(t, id, distinct[0], "timer %s: the delivered message is not the one its schedule answered", key)
	}
	for txn := range r.received {
		require.Contains(t, stored, txn, "a message no timer of the test scheduled was delivered")
	}
	require.Len(t, stored, len(r.received), "messages stored in %s but never delivered", timersQueue)
	dead, err := r.pending(t.Context(), true)
	require.NoError(t, err)
	for _, d := range append(dead, left...) {
		key, _, _ := strings.Cut(d, " ")
		require.True(t, r.ambiguous[key], "timer %s, scheduled once, is left over (its message was delivered): %s", key, d)
	}
	require.Positive(t, r.disrupted, "no schedule met the faults: the test proved nothing")
	t.Logf("timers: %d of %d acknowledged (%d after an ambiguous attempt), %d schedule attempts disrupted, "+
		"%d redeliveries of a message, %d twins of an ambiguous schedule left (pending %d, dead %d)",
		len(r.acked), timersCount, ambiguous, r.disrupted, redelivered, len(dead)+len(left), len(left), len(dead))
}

// storedMessages counts the messages of timersQueue per transaction id, read on the
// primary.
func storedMessages(t *testing.T, pc *patronitest.Cluster) map[string]int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pc.DSN())
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.WithoutCancel(t.Context())) }()
	rows, err := conn.Query(t.Context(), `SELECT m.transaction_id, count(*) FROM queen.messages m
  JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
 WHERE q.name = $1 GROUP BY 1`, timersQueue)
	require.NoError(t, err)
	out := map[string]int{}
	for rows.Next() {
		var txn string
		var n int
		require.NoError(t, rows.Scan(&txn, &n))
		out[txn] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// waitFor waits until at, or less if ctx ends first; it reports whether ctx is
// still live.
func waitFor(ctx context.Context, at time.Time) bool {
	return sleepCtx(ctx, time.Until(at))
}

// sleepCtx waits d, or less if ctx ends first; it reports whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}
