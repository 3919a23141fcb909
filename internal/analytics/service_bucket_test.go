package analytics_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/analytics"
	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
	"github.com/queenmq/queen/internal/testlog"
)

// newService returns a service with cfg's bucket and flush settings over a store on a
// new test database, with one long-poll parked on queue "parked".
func newService(t *testing.T, cfg analytics.Config) *analytics.Service {
	t.Helper()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	cfg.Hostname, cfg.WorkerID, cfg.PID = "h", "w1", 7
	cfg.ParkedFunc = func() (int, map[string]int) { return 1, map[string]int{"parked": 1} }
	return analytics.New(cfg, st, testlog.Logger(t))
}

// TestShortBuckets: with a Bucket under a minute the recorder writes buckets of that
// width, Run writes each once it has closed (no FlushInterval needed), and the views
// of windows up to an hour use it: bucketSeconds is exact, bucketMinutes 0, parked
// averages are per bucket.
func TestShortBuckets(t *testing.T) {
	t.Parallel()

	t.Run("RunWritesEachBucketOnceClosed", func(t *testing.T) {
		t.Parallel()
		svc := newService(t, analytics.Config{Bucket: time.Second})
		svc.RecordPush(time.Now(), []queue.PushResult{{Queue: "short-q", Status: queue.StatusQueued}})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- svc.Run(ctx) }()
		// Run's first flush comes on the first tick, past the second of the push.
		waitFlushes(t, svc, 1, "written once its second closed, not at the minute's end")
		require.EqualValues(t, 1, opsSum(t, svc, "short-q").PushMessages)
		cancel()
		require.NoError(t, <-done)
		require.EqualValues(t, 1, opsSum(t, svc, "short-q").PushMessages, "the final flush adds nothing twice")
	})

	t.Run("ViewsUseTheBucketWidth", func(t *testing.T) {
		t.Parallel()
		svc := newService(t, analytics.Config{Bucket: 2 * time.Second})
		now := time.Now().UTC()
		first := now.Truncate(2 * time.Second).Add(-10 * time.Second)
		svc.RecordPush(first, []queue.PushResult{{Queue: "w-q", Status: queue.StatusQueued}})
		svc.RecordPush(first.Add(2*time.Second), []queue.PushResult{{Queue: "w-q", Status: queue.StatusQueued},
			{Queue: "w-q", Status: queue.StatusQueued}})
		_, err := svc.Flush(t.Context()) // also samples the parked long-poll once
		require.NoError(t, err)

		ops, err := svc.QueueOps(t.Context(), analytics.Filter{Queue: "w-q"})
		require.NoError(t, err)
		require.Equal(t, 2, ops.BucketSeconds)
		require.Zero(t, ops.BucketMinutes, "under a minute")
		require.Len(t, ops.Series, 2)
		require.Equal(t, api.FormatSeconds(first.Add(2*time.Second)), ops.Series[0].Bucket, "newest first")
		require.EqualValues(t, 2, ops.Series[0].PushMessages)
		require.InDelta(t, 1.0, ops.Series[0].PushPerSecond, 1e-9, "two messages in two seconds")
		require.Equal(t, api.FormatSeconds(first), ops.Series[1].Bucket)

		parked, err := svc.ParkedReplicas(t.Context(), analytics.Filter{Queue: "parked"})
		require.NoError(t, err)
		require.Len(t, parked.Series, 1)
		require.InDelta(t, 0.5, parked.Series[0].ParkedCount, 1e-9,
			"one parked pop sampled in one of the bucket's two seconds: the bucket's average")

		wide, err := svc.QueueOps(t.Context(), analytics.Filter{Queue: "w-q", From: now.Add(-6 * time.Hour), To: now})
		require.NoError(t, err)
		require.Equal(t, 5, wide.BucketMinutes, "longer windows keep their widths")
		require.Equal(t, 300, wide.BucketSeconds)
		var pushed int64
		for _, p := range wide.Series {
			pushed += p.PushMessages
		}
		require.EqualValues(t, 3, pushed)
		wideParked, err := svc.ParkedReplicas(t.Context(), analytics.Filter{Queue: "parked",
			From: now.Add(time.Minute - 6*time.Hour), To: now.Add(time.Minute)})
		require.NoError(t, err)
		require.Equal(t, 5, wideParked.BucketMinutes)
		require.Len(t, wideParked.Series, 1)
		require.InDelta(t, 1.0/300, wideParked.Series[0].ParkedCount, 1e-9, "one sample in five minutes of samples")
	})
}

// TestWorkerMetricsLeavesOutBucketsWithoutABroker: buckets no broker process wrote
// are absent from the series (a gap), not zero-filled; pointCount counts the others.
func TestWorkerMetricsLeavesOutBucketsWithoutABroker(t *testing.T) {
	t.Parallel()
	svc := newService(t, analytics.Config{Bucket: time.Minute})
	now := time.Now().UTC()
	early, late := now.Add(-40*time.Minute).Truncate(time.Minute), now.Add(-10*time.Minute).Truncate(time.Minute)
	svc.RecordPush(early, []queue.PushResult{{Queue: "gap-q", Status: queue.StatusQueued}})
	svc.RecordPush(late, []queue.PushResult{{Queue: "gap-q", Status: queue.StatusQueued}})
	_, err := svc.Flush(t.Context()) // and a gauge sample now
	require.NoError(t, err)

	m, err := svc.WorkerMetrics(t.Context(), analytics.Filter{})
	require.NoError(t, err)
	require.Equal(t, 1, m.BucketMinutes)
	require.Equal(t, 60, m.BucketSeconds)
	got := make([]string, 0, len(m.TimeSeries))
	for _, p := range m.TimeSeries {
		got = append(got, p.Timestamp)
	}
	require.Equal(t, []string{api.FormatSeconds(now.Truncate(time.Minute)), api.FormatSeconds(late),
		api.FormatSeconds(early)}, got, "the three buckets a broker wrote, newest first, and no others")
	require.Equal(t, 3, m.PointCount)
	require.EqualValues(t, 1, m.TimeSeries[1].PushMessages)
	require.EqualValues(t, 2, m.Summary.TotalPushMessages)
}
