package store_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

func TestActivityAdd(t *testing.T) {
	t.Parallel()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	ctx := t.Context()
	minute := time.Now().UTC().Truncate(time.Minute).Add(-2 * time.Minute)

	flush := func(worker string, push, pop, lagSum, lagMax int64, parked float64) store.ActivityFlush {
		c := store.ActivityCounts{PushRequests: 1, PushMessages: push, PopRequests: 1, PopMessages: pop,
			LagCount: pop, LagSumMs: lagSum, LagMaxMs: lagMax}
		return store.ActivityFlush{Hostname: "h", WorkerID: worker, PID: 1,
			Queues: []store.QueueActivity{{Bucket: minute, Queue: "q1", ActivityCounts: c},
				{Bucket: minute, Queue: "q2", ActivityCounts: c}},
			Workers: []store.WorkerActivity{{Bucket: minute, ActivityCounts: c,
				WorkerGauges: store.WorkerGauges{Samples: 2, FreeSlotsSum: 6, FreeSlotsMin: 2, DBConnections: 4}}},
			Parked: []store.ParkedReplica{{Bucket: minute, Queue: "q1", Parked: parked, Max: 1}},
			System: []store.SystemActivity{{Bucket: minute, Samples: 2,
				Metrics: json.RawMessage(`{"memory":{"rss_bytes":{"avg":5,"min":4,"max":6,"last":6}}}`)}},
		}
	}

	// Two processes flush the same minute concurrently (rows are locked in one order:
	// no deadlock), then one of them again: the counters add up.
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, f := range []store.ActivityFlush{flush("w1", 3, 2, 30, 20, 0.5), flush("w2", 5, 1, 40, 40, 0.25)} {
		wg.Go(func() { errs <- st.ActivityAdd(ctx, f) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, st.ActivityAdd(ctx, flush("w1", 1, 1, 10, 10, 0.25)))

	window := store.SeriesFilter{From: minute, To: minute.Add(time.Minute), Bucket: time.Minute}
	qs, err := st.QueueActivitySeries(ctx, window)
	require.NoError(t, err)
	require.Len(t, qs, 2)
	q1 := qs[0]
	require.Equal(t, "q1", q1.Queue)
	require.Equal(t, int64(9), q1.PushMessages)
	require.Equal(t, int64(3), q1.PushRequests)
	require.Equal(t, int64(4), q1.PopMessages)
	require.Equal(t, 20.0, q1.AvgLagMs(), "weighted: (30+40+10)/4")
	require.Equal(t, int64(40), q1.LagMaxMs)
	require.InDelta(t, 1.0, q1.Parked, 1e-9, "parked averages of both replicas add up")
	require.Zero(t, qs[1].Parked)

	ws, err := st.WorkerActivitySeries(ctx, window)
	require.NoError(t, err)
	require.Len(t, ws, 2)
	require.Equal(t, "w1", ws[0].WorkerID)
	require.Equal(t, int64(4), ws[0].PushMessages)
	require.Equal(t, int64(4), ws[0].Samples)
	require.Equal(t, 3.0, ws[0].AvgFreeSlots())
	require.Equal(t, int64(2), ws[0].FreeSlotsMin)

	parked, err := st.ParkedReplicaSeries(ctx, window)
	require.NoError(t, err)
	require.Len(t, parked, 2)
	require.InDelta(t, 0.75, parked[0].Parked, 1e-9, "w1 flushed twice")

	sys, err := st.SystemActivityList(ctx, window)
	require.NoError(t, err)
	require.Len(t, sys, 2, "one row per process, rewritten rather than added")
	require.Equal(t, int64(2), sys[0].Samples)
	require.JSONEq(t, `{"memory":{"rss_bytes":{"avg":5,"min":4,"max":6,"last":6}}}`, string(sys[0].Metrics))

	other := window
	other.Queue = "q2"
	only, err := st.QueueActivitySeries(ctx, other)
	require.NoError(t, err)
	require.Len(t, only, 1)

	rs, err := st.RetentionSeries(ctx, window)
	require.NoError(t, err)
	require.Empty(t, rs)
}

// TestActivityShortBuckets: rows of buckets under a minute are read back per bucket,
// and the partitions created are counted in the bucket they were created in only.
func TestActivityShortBuckets(t *testing.T) {
	t.Parallel()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	ctx := t.Context()
	const width = 5 * time.Second
	// The queue's Default partition is created now: in the bucket of created, unless
	// the configure crossed a bucket's end (then again, with another queue).
	var name string
	var created time.Time
	for i := 0; created.IsZero(); i++ {
		name = fmt.Sprintf("short-%d", i)
		at := time.Now().UTC().Truncate(width)
		_, _, err = st.QueueConfigure(ctx, queue.Queue{Name: name})
		require.NoError(t, err)
		if time.Now().UTC().Truncate(width).Equal(at) {
			created = at
		}
	}
	before := created.Add(-width)
	c := store.ActivityCounts{PushRequests: 1, PushMessages: 1}
	require.NoError(t, st.ActivityAdd(ctx, store.ActivityFlush{Hostname: "h", WorkerID: "w", PID: 1, Width: width,
		Queues: []store.QueueActivity{{Bucket: before, Queue: name, ActivityCounts: c},
			{Bucket: created, Queue: name, ActivityCounts: c}}}))

	qs, err := st.QueueActivitySeries(ctx, store.SeriesFilter{From: before, To: created.Add(width), Bucket: width})
	require.NoError(t, err)
	require.Len(t, qs, 2, "one row per 5 s bucket")
	require.Equal(t, created, qs[0].Bucket, "newest first")
	require.EqualValues(t, 1, qs[0].PartitionsCreated, "the Default partition, created in this bucket")
	require.Equal(t, before, qs[1].Bucket)
	require.Zero(t, qs[1].PartitionsCreated, "not in the bucket before, though within a minute of it")
	require.EqualValues(t, 1, qs[1].PartitionCount)
}

func TestMaintenanceFlags(t *testing.T) {
	t.Parallel()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	ctx := t.Context()

	push, pop, err := st.MaintenanceGet(ctx)
	require.NoError(t, err)
	require.False(t, push)
	require.False(t, pop)

	require.NoError(t, st.MaintenanceSet(ctx, store.MaintenanceKeyPop, true))
	push, pop, err = st.MaintenanceGet(ctx)
	require.NoError(t, err)
	require.False(t, push)
	require.True(t, pop)

	require.NoError(t, st.MaintenanceSet(ctx, store.MaintenanceKeyPush, true))
	require.NoError(t, st.MaintenanceSet(ctx, store.MaintenanceKeyPop, false))
	push, pop, err = st.MaintenanceGet(ctx)
	require.NoError(t, err)
	require.True(t, push)
	require.False(t, pop)
}
