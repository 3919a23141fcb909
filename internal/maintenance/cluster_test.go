package maintenance_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/maintenance"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// lagOf returns the (group, queue) points of the samples in [from, to) at bucket.
func (tb *testBundle) lagOf(t *testing.T, from, to time.Time, bucket time.Duration) map[string]store.ConsumerLagPoint {
	t.Helper()
	points, err := tb.st.ConsumerLagSeries(t.Context(), store.SeriesFilter{From: from, To: to, Bucket: bucket}, "")
	require.NoError(t, err)
	out := make(map[string]store.ConsumerLagPoint)
	for _, p := range points {
		out[p.Bucket.Format("15:04")+" "+p.Group+"@"+p.Queue] = p
	}
	return out
}

// TestConsumerLagSample: the job writes one row per (group, queue) into the minute of
// its clock, a second sample in that minute replaces the first, and the pair cap
// truncates.
func TestConsumerLagSample(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	start := time.Now().UTC().Truncate(5 * time.Minute).Add(-time.Hour)
	tb.now.Store(start.Add(10 * time.Second).UnixNano())
	tb.configure(t, "lag", func(*queue.Options) {})
	tb.push(t, "lag", 5)
	tb.consume(t, "lag", "g", 2, "completed")
	tb.consume(t, "lag", "idle", 1, "") // popped, never acknowledged: everything is unconsumed
	tb.consume(t, "lag", "", 5, "completed")
	jobs := maintenance.Jobs(tb.st, tb.settings())
	sample := job(t, jobs, maintenance.JobConsumerLag)
	require.Equal(t, maintenance.ConsumerLagInterval, sample.Interval())

	res := run(t, sample)
	require.Equal(t, maintenance.Result{Rows: 3, Batches: 1}, res)
	got := tb.lagOf(t, start, start.Add(time.Hour), time.Minute)
	minute := start.Format("15:04")
	g := got[minute+" g@lag"]
	require.EqualValues(t, 3, g.TotalLag)
	require.Equal(t, 1, g.PartitionsWithLag)
	require.Positive(t, g.MaxTimeLag, "the oldest unconsumed message has an age")
	require.EqualValues(t, 5, got[minute+" idle@lag"].TotalLag)
	qm := got[minute+" "+queue.QueueModeGroup+"@lag"]
	require.Zero(t, qm.TotalLag)
	require.Zero(t, qm.PartitionsWithLag)
	require.Zero(t, qm.MaxTimeLag)

	// A second sample in the same minute replaces the first.
	tb.consume(t, "lag", "g", 1, "completed")
	tb.advance(30 * time.Second)
	run(t, sample)
	require.Equal(t, 3, tb.count(t, `SELECT count(*) FROM queen.consumer_lag_history`))
	require.EqualValues(t, 2, tb.lagOf(t, start, start.Add(time.Hour), time.Minute)[minute+" g@lag"].TotalLag)

	// The next minute gets rows of its own; a 5-minute bucket holds the largest sample.
	tb.consume(t, "lag", "g", 2, "completed")
	tb.advance(time.Minute)
	run(t, sample)
	require.Equal(t, 6, tb.count(t, `SELECT count(*) FROM queen.consumer_lag_history`))
	perMinute := tb.lagOf(t, start, start.Add(time.Hour), time.Minute)
	require.Zero(t, perMinute[start.Add(time.Minute).Format("15:04")+" g@lag"].TotalLag)
	wide := tb.lagOf(t, start, start.Add(time.Hour), 5*time.Minute)
	require.Len(t, wide, 3)
	require.EqualValues(t, 2, wide[minute+" g@lag"].TotalLag, "the largest of the bucket's samples (2, then 0)")

	// Filters.
	only, err := tb.st.ConsumerLagSeries(t.Context(), store.SeriesFilter{From: start, To: start.Add(time.Hour),
		Bucket: time.Minute, Queue: "lag"}, "idle")
	require.NoError(t, err)
	require.Len(t, only, 2)
	require.Equal(t, "idle", only[0].Group)
	require.True(t, only[0].Bucket.Before(only[1].Bucket), "oldest first")

	// The cap: the first pairs by group name, and the cycle says it left some out.
	s := tb.settings()
	s.ConsumerLagPairs = 2
	res = run(t, job(t, maintenance.Jobs(tb.st, s), maintenance.JobConsumerLag))
	require.Equal(t, maintenance.Result{Rows: 2, Batches: 1, Truncated: true}, res)
}

// TestConsumerLagSampleShortBuckets: with a ConsumerLagInterval under a minute
// (QUEEN_ANALYTICS_BUCKET), the job samples into buckets of that width: two samples
// five seconds apart are two points of a 5 s series and one of a minute series.
func TestConsumerLagSampleShortBuckets(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	start := time.Now().UTC().Truncate(time.Minute).Add(-time.Hour)
	tb.now.Store(start.Add(time.Second).UnixNano())
	tb.configure(t, "lag5", func(*queue.Options) {})
	tb.push(t, "lag5", 3)
	tb.consume(t, "lag5", "g", 1, "completed")
	s := tb.settings()
	s.ConsumerLagInterval = 5 * time.Second
	sample := job(t, maintenance.Jobs(tb.st, s), maintenance.JobConsumerLag)
	require.Equal(t, 5*time.Second, sample.Interval())
	run(t, sample)
	tb.advance(5 * time.Second)
	run(t, sample)

	fine, err := tb.st.ConsumerLagSeries(t.Context(), store.SeriesFilter{From: start, To: start.Add(time.Minute),
		Bucket: 5 * time.Second, Queue: "lag5"}, "g")
	require.NoError(t, err)
	require.Len(t, fine, 2)
	require.Equal(t, start, fine[0].Bucket, "the bucket of the first sample, at 5 s")
	require.Equal(t, start.Add(5*time.Second), fine[1].Bucket)
	require.EqualValues(t, 2, fine[1].TotalLag)
	require.Len(t, tb.lagOf(t, start, start.Add(time.Hour), time.Minute), 1, "one point of a minute series")
}

// TestReplicaCleanup: rows of replicas silent for longer than ReplicaRetention go.
func TestReplicaCleanup(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, name := range []string{"gone", "here"} {
		_, err := tb.st.ReplicaBeat(t.Context(), store.Replica{Instance: name, ProcessID: "p", StartedAt: time.Now()})
		require.NoError(t, err)
	}
	_, err := tb.pool.Exec(t.Context(), `UPDATE queen.replicas SET last_seen_at = now() - interval '61 minutes'
		WHERE instance = 'gone'`)
	require.NoError(t, err)
	cleanup := job(t, maintenance.Jobs(tb.st, tb.settings()), maintenance.JobReplicaCleanup)
	require.EqualValues(t, 1, run(t, cleanup).Rows)
	require.Equal(t, 1, tb.count(t, `SELECT count(*) FROM queen.replicas WHERE instance = 'here'`))
	require.Zero(t, run(t, cleanup).Rows)
}

// TestJobStates: the runner keeps this replica's view of each job: the last run's
// outcome and time, the last cycle's outcome (skips included), the last success.
func TestJobStates(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	fail := errors.New("boom")
	var failing bool
	j := &funcJob{name: "states", run: func() error {
		if failing {
			return fail
		}
		return nil
	}}
	r, err := maintenance.New(tb.st, []maintenance.Job{j}, prometheus.NewRegistry(), maintenance.Options{Instance: "a"})
	require.NoError(t, err)
	require.Equal(t, []store.ReplicaJob{{Name: "states"}}, r.JobStates(), "no cycle yet")

	before := time.Now()
	out, _, err := r.RunCycle(t.Context(), j)
	require.NoError(t, err)
	require.Equal(t, maintenance.OutcomeSuccess, out)
	st := r.JobStates()[0]
	require.Equal(t, "success", st.LastResult)
	require.Equal(t, "success", st.LastCycle)
	require.NotNil(t, st.LastSuccessAt)
	require.False(t, st.LastSuccessAt.Before(before.Truncate(time.Millisecond)))
	success := *st.LastSuccessAt

	out, _, err = r.RunCycle(t.Context(), j)
	require.NoError(t, err)
	require.Equal(t, maintenance.OutcomeNotDue, out)
	st = r.JobStates()[0]
	require.Equal(t, "success", st.LastResult, "a skip is not a run")
	require.Equal(t, "skipped_not_due", st.LastCycle)

	_, err = tb.pool.Exec(t.Context(), `DELETE FROM queen.maintenance_jobs`)
	require.NoError(t, err)
	failing = true
	_, _, err = r.RunCycle(t.Context(), j)
	require.ErrorIs(t, err, fail)
	st = r.JobStates()[0]
	require.Equal(t, "error", st.LastResult)
	require.Equal(t, "boom", st.LastError)
	require.Equal(t, success, *st.LastSuccessAt, "the last success stays")
	require.True(t, st.LastRunAt.After(success) || st.LastRunAt.Equal(success))
}

// funcJob is a job that runs a function.
type funcJob struct {
	name string
	run  func() error
}

func (j *funcJob) Name() string            { return j.name }
func (j *funcJob) Interval() time.Duration { return time.Hour }
func (j *funcJob) UpstreamLock() bool      { return false }
func (j *funcJob) RunOnce(context.Context) (maintenance.Result, error) {
	return maintenance.Result{Batches: 1}, j.run()
}

// TestAnalyzeJob: the analyze job exists only with an interval, and analyzes a hot
// table that grew past twice its statistics, once.
func TestAnalyzeJob(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, j := range maintenance.Jobs(tb.st, tb.settings()) {
		require.NotEqual(t, maintenance.JobAnalyze, j.Name(), "no interval, no job")
	}
	s := tb.settings()
	s.AnalyzeInterval = time.Minute
	analyze := job(t, maintenance.Jobs(tb.st, s), maintenance.JobAnalyze)
	_, err := tb.pool.Exec(t.Context(), `ANALYZE queen.queues`)
	require.NoError(t, err)
	// Queues this session reports at once, so the job sees them now.
	_, err = tb.pool.Exec(t.Context(), `INSERT INTO queen.queues (name) SELECT 'q' || i FROM generate_series(1, 600) AS i;
		SELECT pg_stat_force_next_flush()`)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		res, err := analyze.RunOnce(t.Context())
		if err != nil {
			t.Log(err)
		}
		return err == nil && res.Rows == 1
	}, 30*time.Second, 100*time.Millisecond)
	require.Zero(t, run(t, analyze).Rows, "analyzed twice")
}
