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

type testBundle struct {
	st  *store.Store
	svc *analytics.Service
}

// setup returns a service over a store on a new test database, with one long-poll
// parked on queue "parked".
func setup(t *testing.T) *testBundle {
	t.Helper()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	svc := analytics.New(analytics.Config{Hostname: "h", WorkerID: "w1", PID: 7, Bucket: time.Minute,
		ParkedFunc: func() (int, map[string]int) { return 1, map[string]int{"parked": 1} }}, st, testlog.Logger(t))
	return &testBundle{st: st, svc: svc}
}

// opsSum sums a queue's queue-ops series of the last hour.
func opsSum(t *testing.T, svc *analytics.Service, name string) api.QueueOpsPoint {
	t.Helper()
	ops, err := svc.QueueOps(t.Context(), analytics.Filter{Queue: name})
	require.NoError(t, err)
	var sum api.QueueOpsPoint
	for _, p := range ops.Series {
		require.Equal(t, name, p.QueueName)
		sum.PushMessages += p.PushMessages
		sum.PartitionsDeleted += p.PartitionsDeleted
	}
	return sum
}

func TestService(t *testing.T) {
	t.Parallel()

	t.Run("RunFlushesWhatIsLeftWhenStoppedAndReturnsNil", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.svc.RecordPush(time.Now(), []queue.PushResult{
			{Queue: "run-q", Status: queue.StatusQueued}, {Queue: "run-q", Status: queue.StatusDuplicate}})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- tb.svc.Run(ctx) }()
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err, "a normal stop")
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after its context was cancelled")
		}
		require.EqualValues(t, 1, opsSum(t, tb.svc, "run-q").PushMessages, "the final flush wrote the current minute")
		snap := tb.svc.Activity()
		require.False(t, snap.LastFlush.IsZero())
		require.EqualValues(t, 1, snap.Total.PushMessages)
		require.Equal(t, 1, snap.Parked)
	})

	t.Run("FlushReportsWhatItWrote", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.svc.RecordPush(time.Now(), []queue.PushResult{{Queue: "flush-q", Status: queue.StatusQueued}})
		flushed, err := tb.svc.Flush(t.Context())
		require.NoError(t, err)
		require.Equal(t, api.FlushedStats{Minutes: 1, QueueRows: 1, WorkerRows: 1, ParkedRows: 1, SystemRows: 1}, flushed,
			"flush-q's counters, the process row, the parked long-poll and the process sample")
		parked, err := tb.svc.ParkedReplicas(t.Context(), analytics.Filter{Queue: "parked"})
		require.NoError(t, err)
		require.Equal(t, []api.ReplicaID{{Hostname: "h", WorkerID: "w1"}}, parked.Replicas)
	})

	t.Run("PartitionCleanupCountsTheDeletedPartitions", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		ctx := t.Context()
		_, _, err := tb.st.QueueConfigure(ctx, queue.Queue{Name: "gc-q"})
		require.NoError(t, err)
		require.Zero(t, opsSum(t, tb.svc, "gc-q").PartitionsDeleted)
		n, err := tb.st.PartitionCleanupBatch(ctx, time.Now().Add(time.Minute), 10)
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "the queue's empty Default partition")
		require.EqualValues(t, 1, opsSum(t, tb.svc, "gc-q").PartitionsDeleted)
		n, err = tb.st.PartitionCleanupBatch(ctx, time.Now().Add(time.Minute), 10)
		require.NoError(t, err)
		require.Zero(t, n)
		require.EqualValues(t, 1, opsSum(t, tb.svc, "gc-q").PartitionsDeleted, "a run that deletes nothing counts nothing")
	})

	t.Run("RefusesBadFilters", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		_, err := tb.svc.Status(t.Context(), analytics.Filter{Queue: "bad\x00name"})
		var ve *queue.ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "queue must be valid UTF-8 without NUL characters", ve.Message)
		_, err = tb.svc.MessageCounts(t.Context(), analytics.Filter{}, "week")
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "interval must be minute, hour or day", ve.Message)
		now := time.Now()
		_, err = tb.svc.SystemMetrics(t.Context(), analytics.Filter{From: now, To: now.Add(-time.Hour)})
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "from must be before to", ve.Message)
	})
}
