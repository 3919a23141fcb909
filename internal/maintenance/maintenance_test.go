package maintenance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/maintenance"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/progress"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// testBundle is a database with a broker (to make messages the real way), a store for
// the jobs, a pool for direct checks and a clock the jobs read.
type testBundle struct {
	url  string
	st   *store.Store
	b    *broker.Broker
	pool *pgxpool.Pool
	now  atomic.Int64 // Unix nanos, read by the jobs
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	url := pgtest.NewDBURL(t)
	tb := &testBundle{url: url, st: openStore(t, url)}
	tb.b = broker.New(broker.DefaultConfig(), tb.st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	pool, err := pgxpool.New(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	tb.pool = pool
	tb.now.Store(time.Now().UnixNano())
	return tb
}

func openStore(t *testing.T, url string) *store.Store {
	t.Helper()
	st, err := store.Open(store.Options{ConnString: url, MaxConns: 6})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	return st
}

func (tb *testBundle) clock() time.Time        { return time.Unix(0, tb.now.Load()) }
func (tb *testBundle) advance(d time.Duration) { tb.now.Add(int64(d)) }

func (tb *testBundle) settings() maintenance.Settings {
	return maintenance.Settings{
		RetentionInterval: time.Hour, EvictionInterval: time.Hour, BatchSize: 2, EvictionBatchSize: 100,
		PartitionIdle: 30 * 24 * time.Hour, MetricsRetention: 90 * 24 * time.Hour, NowFunc: tb.clock,
	}
}

// job returns the job called name among jobs.
func job(t *testing.T, jobs []maintenance.Job, name string) maintenance.Job {
	t.Helper()
	for _, j := range jobs {
		if j.Name() == name {
			return j
		}
	}
	t.Fatalf("no job %q", name)
	return nil
}

func (tb *testBundle) configure(t *testing.T, name string, mutate func(*queue.Options)) {
	t.Helper()
	opts := queue.DefaultOptions()
	mutate(&opts)
	_, _, err := tb.b.Configure(t.Context(), queue.Queue{Name: name, Options: opts})
	require.NoError(t, err)
}

func (tb *testBundle) push(t *testing.T, q string, n int) {
	t.Helper()
	items := make([]queue.PushItem, n)
	for i := range items {
		items[i] = queue.PushItem{Queue: q, TransactionID: fmt.Sprintf("%s-%d", q, i), Payload: json.RawMessage(`{}`)}
	}
	_, err := tb.b.Push(t.Context(), items)
	require.NoError(t, err)
}

// consume pops n messages of q for group and acks them with status.
func (tb *testBundle) consume(t *testing.T, q, group string, n int, status string) []queue.Message {
	t.Helper()
	req := queue.PopRequest{Queue: q, ConsumerGroup: group, Batch: n}
	require.NoError(t, tb.b.NormalizePop(&req))
	res, err := tb.b.Pop(t.Context(), req)
	require.NoError(t, err)
	require.Len(t, res.Messages, n)
	if status == "" {
		return res.Messages
	}
	acks := make([]queue.Ack, len(res.Messages))
	for i, m := range res.Messages {
		acks[i] = queue.Ack{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: res.LeaseID, Status: status}
	}
	out, err := tb.b.Ack(t.Context(), queue.Scope{}, group, acks)
	require.NoError(t, err)
	for _, r := range out {
		require.True(t, r.Success, "%+v", r)
	}
	return res.Messages
}

// count runs a count query.
func (tb *testBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, tb.pool.QueryRow(t.Context(), sql, args...).Scan(&n))
	return n
}

func (tb *testBundle) messages(t *testing.T, q string) int {
	return tb.count(t, `SELECT count(*) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
		JOIN queen.queues qq ON qq.id = p.queue_id WHERE qq.name = $1`, q)
}

func run(t *testing.T, j maintenance.Job) maintenance.Result {
	t.Helper()
	res, err := j.RunOnce(t.Context())
	require.NoError(t, err)
	return res
}

// Message ids that order the reverse of creation: pushReversed gives the first
// message idHigh and the second idLow.
const (
	idHigh = "ffffffff-ffff-7fff-bfff-ffffffffffff"
	idLow  = "00000000-0000-7000-8000-000000000000"
)

// pushReversed pushes n1, then n2, to q's default partition in two pushes (n2 gets
// the later created_at), then rewrites their ids so that id order is the reverse of
// created_at order. The partition's head in partition_lookup follows n2 to its new id;
// the other references to a message id (dead-letter entries, traces, cursors) do not
// exist before it is consumed.
func (tb *testBundle) pushReversed(t *testing.T, q string) {
	t.Helper()
	for _, txn := range []string{"n1", "n2"} {
		_, err := tb.b.Push(t.Context(), []queue.PushItem{{Queue: q, TransactionID: txn, Payload: json.RawMessage(`{}`)}})
		require.NoError(t, err)
	}
	_, err := tb.pool.Exec(t.Context(), `
		WITH m AS (
		    UPDATE queen.messages m
		       SET id = CASE m.transaction_id WHEN 'n1' THEN $2::uuid ELSE $3::uuid END
		      FROM queen.partitions p JOIN queen.queues qq ON qq.id = p.queue_id
		     WHERE p.id = m.partition_id AND qq.name = $1
		    RETURNING m.id, m.partition_id, m.created_at
		)
		UPDATE queen.partition_lookup pl SET last_message_id = m.id
		  FROM m
		 WHERE pl.partition_id = m.partition_id AND pl.last_message_created_at = m.created_at`, q, idHigh, idLow)
	require.NoError(t, err)
	require.Equal(t, 1, tb.count(t, `SELECT count(*) FROM queen.messages a JOIN queen.messages b ON b.partition_id = a.partition_id
		WHERE a.id = $1 AND a.transaction_id = 'n1' AND b.id = $2 AND b.transaction_id = 'n2' AND a.created_at < b.created_at`,
		idHigh, idLow), "n1 is created first and has the higher id")
	require.Equal(t, 1, tb.count(t, `SELECT count(*) FROM queen.partition_lookup WHERE queue_name = $1 AND last_message_id = $2`,
		q, idLow), "the head is n2")
}

// ackFirst pops one message of q for group g, which must be n1 (delivery follows
// created_at), and acknowledges it: g's cursor is then at n1.
func (tb *testBundle) ackFirst(t *testing.T, q string) {
	t.Helper()
	got := tb.consume(t, q, "g", 1, "completed")
	require.Equal(t, "n1", got[0].TransactionID)
	require.Equal(t, 1, tb.count(t, `SELECT count(*) FROM queen.partition_consumers
		WHERE consumer_group = 'g' AND last_consumed_id = $1`, idHigh), "the cursor is at n1")
}

// left returns the transaction ids of q's messages, in delivery order.
func (tb *testBundle) left(t *testing.T, q string) []string {
	t.Helper()
	rows, err := tb.pool.Query(t.Context(), `SELECT m.transaction_id FROM queen.messages m
		JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues qq ON qq.id = p.queue_id
		WHERE qq.name = $1 ORDER BY m.created_at, m.id`, q)
	require.NoError(t, err)
	txns, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return txns
}

// TestRetention is the retention test of the issue: with short settings, completed
// messages and expired ones go, pending ones stay.
func TestRetention(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.configure(t, "done", func(o *queue.Options) { o.RetentionEnabled, o.CompletedRetentionSeconds = true, 60 })
	tb.configure(t, "expire", func(o *queue.Options) { o.RetentionEnabled, o.RetentionSeconds = true, 60 })
	tb.configure(t, "keep", func(o *queue.Options) { o.RetentionEnabled, o.RetentionSeconds = true, 3600 })
	tb.configure(t, "evict", func(o *queue.Options) { o.MaxWaitTimeSeconds = 60 })
	tb.configure(t, "patient", func(o *queue.Options) { o.MaxWaitTimeSeconds = 3600 })
	tb.configure(t, "off", func(o *queue.Options) { o.CompletedRetentionSeconds, o.RetentionSeconds = 60, 60 })
	for _, q := range []string{"done", "expire", "keep", "evict", "patient", "off"} {
		tb.push(t, q, 5)
	}
	tb.consume(t, "done", "g", 3, "completed")
	tb.consume(t, "evict", "g", 2, "completed")
	tb.consume(t, "off", "g", 5, "completed")
	jobs := maintenance.Jobs(tb.st, tb.settings())

	// Nothing is old enough yet.
	for _, name := range []string{maintenance.JobRetention, maintenance.JobCompletedRetention, maintenance.JobEviction} {
		require.Zero(t, run(t, job(t, jobs, name)).Rows, name)
	}

	tb.advance(2 * time.Minute)
	res := run(t, job(t, jobs, maintenance.JobCompletedRetention))
	require.EqualValues(t, 3, res.Rows)
	require.Equal(t, 2, res.Batches, "batches of RETENTION_BATCH_SIZE=2 until one comes back short")
	require.Equal(t, 2, tb.messages(t, "done"), "the two pending messages stay")
	require.EqualValues(t, 5, run(t, job(t, jobs, maintenance.JobRetention)).Rows)
	require.Zero(t, tb.messages(t, "expire"), "expired messages go, consumed or not")
	require.Equal(t, 5, tb.messages(t, "keep"))
	require.EqualValues(t, 3, run(t, job(t, jobs, maintenance.JobEviction)).Rows)
	require.Equal(t, 2, tb.messages(t, "evict"), "eviction takes the unconsumed, not the consumed")
	require.Equal(t, 5, tb.messages(t, "patient"))
	require.Equal(t, 5, tb.messages(t, "off"), "retentionEnabled false: no retention at all")

	// What is left of "done" is still delivered in order.
	rest := tb.consume(t, "done", "g", 2, "")
	require.Equal(t, "done-3", rest[0].TransactionID)

	for typ, want := range map[string]int{"completed_retention": 3, "retention": 5, "max_wait_time_eviction": 3} {
		require.Equal(t, want, tb.count(t, `SELECT coalesce(sum(messages_deleted), 0) FROM queen.retention_history
			WHERE retention_type = $1`, typ), typ)
	}
}

// TestCompletedRetentionNeedsEveryGroup: a message goes only once every group that
// consumes the partition is past it (tuple comparison), and a group that has popped
// but never acknowledged holds the partition back.
func TestCompletedRetentionNeedsEveryGroup(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.configure(t, "multi", func(o *queue.Options) { o.RetentionEnabled, o.CompletedRetentionSeconds = true, 60 })
	tb.push(t, "multi", 4)
	tb.consume(t, "multi", "fast", 4, "completed")
	tb.consume(t, "multi", "slow", 1, "completed")
	jobs := maintenance.Jobs(tb.st, tb.settings())
	tb.advance(2 * time.Minute)
	require.EqualValues(t, 1, run(t, job(t, jobs, maintenance.JobCompletedRetention)).Rows, "only what the slow group consumed")

	tb.consume(t, "multi", "idle", 1, "") // popped, never acknowledged: NULL cursor
	require.Zero(t, run(t, job(t, jobs, maintenance.JobCompletedRetention)).Rows)
	require.Equal(t, 3, tb.messages(t, "multi"))
}

// TestRetentionComparesCursorAsTuple: completed retention and eviction place a message
// against a group's cursor by (created_at, id), never by id alone: ids from brokers with
// skewed clocks need not follow created_at. Here n1 is created before n2 but has the
// higher id, and the group's cursor is at n1.
func TestRetentionComparesCursorAsTuple(t *testing.T) {
	t.Parallel()

	t.Run("CompletedRetentionTakesOnlyWhatIsConsumed", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.configure(t, "tuple-done", func(o *queue.Options) { o.RetentionEnabled, o.CompletedRetentionSeconds = true, 60 })
		tb.pushReversed(t, "tuple-done")
		tb.ackFirst(t, "tuple-done")
		jobs := maintenance.Jobs(tb.st, tb.settings())
		tb.advance(2 * time.Minute)
		require.EqualValues(t, 1, run(t, job(t, jobs, maintenance.JobCompletedRetention)).Rows)
		require.Equal(t, []string{"n2"}, tb.left(t, "tuple-done"), "n1 is consumed and goes; n2, never consumed, stays")
	})

	t.Run("EvictionTakesOnlyWhatIsNotConsumed", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.configure(t, "tuple-evict", func(o *queue.Options) { o.MaxWaitTimeSeconds = 60 })
		tb.pushReversed(t, "tuple-evict")
		tb.ackFirst(t, "tuple-evict")
		jobs := maintenance.Jobs(tb.st, tb.settings())
		tb.advance(2 * time.Minute)
		require.EqualValues(t, 1, run(t, job(t, jobs, maintenance.JobEviction)).Rows)
		require.Equal(t, []string{"n1"}, tb.left(t, "tuple-evict"), "n2 waited too long unconsumed and goes; n1 is consumed and stays")
	})
}

// TestCompletedRetentionWaitsForRegisteredGroups: a consumer group registered on the
// queue by its wildcard pops, that has not reached a partition yet (no cursor there),
// holds that partition's messages back: it will consume them, as the ready rows the
// pushes wrote for it say. Only the groups that have a cursor counted before, and the
// slow group lost the messages the fast one had consumed.
func TestCompletedRetentionWaitsForRegisteredGroups(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.configure(t, "fanout", func(o *queue.Options) { o.RetentionEnabled, o.CompletedRetentionSeconds = true, 60 })
	// The slow group's wildcard pop registers it before there is anything to consume.
	req := queue.PopRequest{Queue: "fanout", ConsumerGroup: "slow", Batch: 1, SubscriptionMode: "all"}
	require.NoError(t, tb.b.NormalizePop(&req))
	res, err := tb.b.Pop(t.Context(), req)
	require.NoError(t, err)
	require.Empty(t, res.Messages)
	require.Equal(t, 1, tb.count(t, `SELECT count(*) FROM queen.queue_consumers WHERE consumer_group = 'slow'`))

	tb.push(t, "fanout", 4)
	tb.consume(t, "fanout", "fast", 4, "completed")
	jobs := maintenance.Jobs(tb.st, tb.settings())
	tb.advance(2 * time.Minute)
	require.Zero(t, run(t, job(t, jobs, maintenance.JobCompletedRetention)).Rows, "the slow group has consumed nothing")
	require.Equal(t, 4, tb.messages(t, "fanout"))

	got := tb.consume(t, "fanout", "slow", 2, "completed")
	require.Equal(t, "fanout-0", got[0].TransactionID, "the slow group starts at the first message")
	require.EqualValues(t, 2, run(t, job(t, jobs, maintenance.JobCompletedRetention)).Rows, "what both groups consumed")
	require.Equal(t, 2, tb.messages(t, "fanout"))
}

// TestDLQRetention: with DLQ_RETENTION_DAYS set, completed retention keeps a
// dead-lettered message while its entry is younger, and dlq_retention removes old
// entries, after which the message goes too.
func TestDLQRetention(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.configure(t, "dlq", func(o *queue.Options) { o.RetentionEnabled, o.CompletedRetentionSeconds = true, 60 })
	tb.push(t, "dlq", 2)
	tb.consume(t, "dlq", "g", 1, "dlq")
	tb.consume(t, "dlq", "g", 1, "completed")
	s := tb.settings()
	s.DLQRetention = 24 * time.Hour
	jobs := maintenance.Jobs(tb.st, s)
	tb.advance(2 * time.Minute)
	require.EqualValues(t, 1, run(t, job(t, jobs, maintenance.JobCompletedRetention)).Rows)
	require.Equal(t, 1, tb.count(t, `SELECT count(*) FROM queen.dead_letter_queue`), "the DLQ entry and its message stay")
	require.Zero(t, run(t, job(t, jobs, maintenance.JobDLQRetention)).Rows)

	tb.advance(25 * time.Hour)
	require.EqualValues(t, 1, run(t, job(t, jobs, maintenance.JobDLQRetention)).Rows)
	require.EqualValues(t, 1, run(t, job(t, jobs, maintenance.JobCompletedRetention)).Rows)
	require.Zero(t, tb.messages(t, "dlq"))
}

// TestCleanupJobs: lease reclaim, empty partitions, stale consumer state and the
// analytics tables.
func TestCleanupJobs(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	jobs := maintenance.Jobs(tb.st, tb.settings())

	t.Run("LeaseReclaimKeepsRedelivery", func(t *testing.T) {
		tb.configure(t, "leased", func(o *queue.Options) { o.LeaseTime = 30 })
		tb.push(t, "leased", 2)
		first := tb.consume(t, "leased", "g", 1, "")
		require.Zero(t, run(t, job(t, jobs, maintenance.JobLeaseReclaim)).Rows, "the lease is live")
		tb.advance(2 * time.Minute)
		require.EqualValues(t, 1, run(t, job(t, jobs, maintenance.JobLeaseReclaim)).Rows)
		require.Zero(t, tb.count(t, `SELECT count(*) FROM queen.partition_consumers WHERE worker_id IS NOT NULL`))
		// The unacknowledged message comes back, as after any expired lease.
		again := tb.consume(t, "leased", "g", 1, "")
		require.Equal(t, first[0].ID, again[0].ID)
	})

	t.Run("EmptyPartitionsAndStaleState", func(t *testing.T) {
		tb.configure(t, "empty", func(*queue.Options) {})
		_, err := tb.pool.Exec(t.Context(), `INSERT INTO queen.consumer_watermarks (queue_name, consumer_group) VALUES ('gone', 'g');
			INSERT INTO queen.consumer_groups_metadata (consumer_group, queue_name, subscription_mode) VALUES ('g', 'gone', 'new')`)
		require.NoError(t, err)
		require.EqualValues(t, 2, run(t, job(t, jobs, maintenance.JobConsumerCleanup)).Rows)

		require.Zero(t, run(t, job(t, jobs, maintenance.JobPartitionCleanup)).Rows, "not idle long enough")
		tb.advance(31 * 24 * time.Hour)
		res := run(t, job(t, jobs, maintenance.JobPartitionCleanup))
		require.Positive(t, res.Rows)
		require.Zero(t, tb.count(t, `SELECT count(*) FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
			WHERE q.name = 'empty'`))
		require.Equal(t, 1, tb.count(t, `SELECT count(*) FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
			WHERE q.name = 'leased'`), "a partition with messages stays")
	})

	t.Run("MetricsTables", func(t *testing.T) {
		_, err := tb.pool.Exec(t.Context(), `
			INSERT INTO queen.queue_activity (bucket_time, queue_name) VALUES (now() - interval '200 days', 'a'), (now(), 'a');
			INSERT INTO queen.worker_activity (bucket_time, hostname, worker_id, pid) VALUES (now() - interval '200 days', 'h', 'w', 1);
			INSERT INTO queen.queue_parked_activity (bucket_time, queue_name, hostname, worker_id) VALUES (now() - interval '200 days', 'a', 'h', 'w');
			INSERT INTO queen.system_activity (bucket_time, hostname, worker_id, pid) VALUES (now() - interval '200 days', 'h', 'w', 1);
			INSERT INTO queen.retention_history (partition_id, messages_deleted, retention_type, executed_at) VALUES (NULL, 1, 'retention', now() - interval '200 days');
			INSERT INTO queen.consumer_lag_history (bucket_time, consumer_group, queue_name) VALUES (now() - interval '200 days', 'g', 'a'), (now(), 'g', 'a');
			-- Upstream's tables of the same purpose, in upstream's layout.
			INSERT INTO queen.queue_lag_metrics (bucket_time, queue_name) VALUES (now() - interval '200 days', 'a'), (now(), 'a');
			INSERT INTO queen.worker_metrics (bucket_time, hostname, worker_id, pid) VALUES (now() - interval '200 days', 'h', 0, 1);
			INSERT INTO queen.queue_parked_replica (bucket_time, queue_name, hostname, worker_id) VALUES (now() - interval '200 days', 'a', 'h', 0);
			INSERT INTO queen.system_metrics ("timestamp", hostname, port, worker_id, metrics) VALUES (now() - interval '200 days', 'h', 6632, 'w', '{}');
			INSERT INTO queen.messages_consumed (consumer_group, messages_completed, acked_at) VALUES ('g', 1, now() - interval '200 days')`)
		require.NoError(t, err)
		require.EqualValues(t, 11, run(t, job(t, jobs, maintenance.JobMetricsCleanup)).Rows)
		require.Equal(t, 1, tb.count(t, `SELECT count(*) FROM queen.consumer_lag_history`), "the recent sample stays")
		require.Equal(t, 1, tb.count(t, `SELECT count(*) FROM queen.queue_activity WHERE queue_name = 'a'`),
			"the partition cleanup above counted its deletions in a row of queue 'empty'")
		require.Equal(t, 1, tb.count(t, `SELECT count(*) FROM queen.queue_lag_metrics`))
	})
}

// TestOneReplicaPerCycle runs two replicas' runners on one database with a short
// interval: every cycle runs on exactly one of them (the other skips it), and runs
// are never closer than the due fraction of the interval.
func TestOneReplicaPerCycle(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDBURL(t)
	const interval = 300 * time.Millisecond
	var mu sync.Mutex
	var starts []time.Time
	var ran progress.Signal // one a run, advanced as the run starts
	type replica struct {
		r   *maintenance.Runner
		reg *prometheus.Registry
	}
	newReplica := func(name string) replica {
		reg := prometheus.NewRegistry()
		j := &recordingJob{interval: interval, record: func() {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			ran.Advance()
		}}
		r, err := maintenance.New(openStore(t, url), []maintenance.Job{j}, reg,
			maintenance.Options{Instance: name, Jitter: -1, FirstRun: 0.01})
		require.NoError(t, err)
		return replica{r, reg}
	}
	a, b := newReplica("a"), newReplica("b")

	// A cycle claimed by both at the same instant runs once.
	var wg sync.WaitGroup
	outs := make([]maintenance.Outcome, 2)
	for i, rep := range []replica{a, b} {
		wg.Go(func() {
			out, _, err := rep.r.RunCycle(t.Context(), rep.r.Jobs()[0])
			require.NoError(t, err)
			outs[i] = out
		})
	}
	wg.Wait()
	require.ElementsMatch(t, []maintenance.Outcome{maintenance.OutcomeSuccess, "skip"}, normalise(outs), "%v", outs)

	ctx, cancel := context.WithCancel(context.Background())
	for _, rep := range []replica{a, b} {
		wg.Go(func() { rep.r.Run(ctx) })
	}
	start := time.Now()
	waitCtx, cancelWait := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancelWait()
	require.NoError(t, ran.WaitFor(waitCtx, 8), "eight runs between the two replicas")
	cancel()
	wg.Wait()
	elapsed := time.Since(start)

	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(starts); i++ {
		gap := starts[i].Sub(starts[i-1])
		require.GreaterOrEqual(t, gap, interval/2, "two runs in one cycle: run %d came %s after run %d", i, gap, i-1)
	}
	require.LessOrEqual(t, float64(len(starts)-1), elapsed.Seconds()/(interval.Seconds()*store.DueFraction)+1)
	success := func(rep replica) float64 { return runsOf(t, rep.reg, "recorded", maintenance.OutcomeSuccess) }
	skipped := func(rep replica) float64 {
		return runsOf(t, rep.reg, "recorded", maintenance.OutcomeNotDue) + runsOf(t, rep.reg, "recorded", maintenance.OutcomeLocked)
	}
	require.Equal(t, float64(len(starts)), success(a)+success(b), "every run counted once")
	require.Positive(t, skipped(a)+skipped(b), "the replica that lost a cycle skipped it")
	var runs int
	require.NoError(t, pgxPoolCount(t, url, &runs))
	require.Equal(t, len(starts), runs, "maintenance_jobs.runs")
	t.Logf("two replicas, interval %s, %s: %d runs (a %v, b %v), %v skips", interval, elapsed.Round(time.Millisecond),
		len(starts), success(a), success(b), skipped(a)+skipped(b))
}

func normalise(outs []maintenance.Outcome) []maintenance.Outcome {
	out := make([]maintenance.Outcome, len(outs))
	for i, o := range outs {
		out[i] = o
		if o == maintenance.OutcomeLocked || o == maintenance.OutcomeNotDue {
			out[i] = "skip"
		}
	}
	return out
}

// recordingJob records when each of its runs starts.
type recordingJob struct {
	interval time.Duration
	record   func()
}

func (j *recordingJob) Name() string            { return "recorded" }
func (j *recordingJob) Interval() time.Duration { return j.interval }
func (j *recordingJob) UpstreamLock() bool      { return false }
func (j *recordingJob) RunOnce(context.Context) (maintenance.Result, error) {
	j.record()
	return maintenance.Result{Batches: 1}, nil
}

// runsOf returns queen_maintenance_runs_total{job,result} from reg (0 when absent).
func runsOf(t *testing.T, reg *prometheus.Registry, job string, result maintenance.Outcome) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "queen_maintenance_runs_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["job"] == job && labels["result"] == string(result) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func pgxPoolCount(t *testing.T, url string, runs *int) error {
	pool, err := pgxpool.New(t.Context(), url)
	if err != nil {
		return err
	}
	defer pool.Close()
	return pool.QueryRow(t.Context(), `SELECT runs FROM queen.maintenance_jobs WHERE name = 'recorded'`).Scan(runs)
}
