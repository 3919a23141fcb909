package analytics

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

func TestActivityRecorder(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 4, 26, 10, 0, 30, 0, time.UTC)
	minute := t0.Truncate(time.Minute)

	setup := func(t *testing.T) *recorder {
		t.Helper()
		a := newRecorder("host", "w1", 42, t0, time.Minute)
		a.recordPush(t0, []queue.PushResult{
			{Queue: "a", Status: queue.StatusQueued}, {Queue: "a", Status: queue.StatusDuplicate},
			{Queue: "b", Status: queue.StatusQueued},
		})
		a.recordPop(t0, queue.PopRequest{Queue: "a"}, queue.PopResult{Queue: "a", Messages: []queue.Message{
			{CreatedAt: t0.Add(-3 * time.Second)}, {CreatedAt: t0.Add(-time.Second)},
		}}, nil)
		a.recordPop(t0, queue.PopRequest{Queue: "a", AutoAck: true}, queue.PopResult{}, errors.New("connection reset"))
		a.recordAck(t0, []queue.Ack{{Status: "completed"}, {Status: "DLQ"}, {}},
			[]queue.AckResult{{Success: true, QueueName: "a"}, {Success: true, DLQ: true, QueueName: "a"},
				{Success: false, QueueName: ""}})
		a.observe(gaugeSample{at: t0, parked: map[string]int{"a": 2}, parkedAll: 2, freeSlots: 7, poolSize: 8,
			system: systemSample{"runtime": {"goroutines": {Stat: api.Stat{Avg: 10, Min: 10, Max: 10, Last: 10}, n: 1}}}})
		return a
	}

	t.Run("CountsPerQueueAndProcess", func(t *testing.T) {
		t.Parallel()
		a := setup(t)
		f, taken, err := a.take(minute.Add(time.Minute), false)
		require.NoError(t, err)
		require.Len(t, taken, 1)
		require.Len(t, f.Workers, 1)
		w := f.Workers[0]
		require.Equal(t, store.ActivityCounts{
			PushRequests: 1, PushMessages: 2, PopRequests: 2, PopEmpty: 1, PopMessages: 2, AckRequests: 1,
			AckMessages: 3, AckSuccess: 1, AckFailed: 2, DLQ: 1, DBErrors: 1, LagCount: 2, LagSumMs: 4000, LagMaxMs: 3000,
		}, w.ActivityCounts)
		require.Equal(t, int64(1), w.Samples)
		require.Equal(t, int64(7), w.FreeSlotsMin)
		require.Equal(t, []string{"a", "b"}, []string{f.Queues[0].Queue, f.Queues[1].Queue})
		qa := f.Queues[0].ActivityCounts
		require.Equal(t, int64(1), qa.PushRequests)
		require.Equal(t, int64(1), qa.PushMessages)
		require.Equal(t, int64(2), qa.PopRequests)
		require.Equal(t, int64(0), qa.DBErrors, "database errors are per process only")
		require.Equal(t, int64(2), qa.AckMessages, "the unknown message has no queue")
		require.Len(t, f.Parked, 1)
		require.InDelta(t, 2.0/60, f.Parked[0].Parked, 1e-9)
		require.Len(t, f.System, 1)
		require.Equal(t, int64(1), f.System[0].Samples)

		totals := a.queues["a"]
		require.Equal(t, int64(2), totals.PopMessages, "lifetime totals survive the flush")
		require.Equal(t, int64(1), a.total.DBErrors)
	})

	t.Run("PopsOfUnknownNamesCrowdNoQueueOut", func(t *testing.T) {
		t.Parallel()
		a := newRecorder("host", "w1", 42, t0, time.Minute)
		// Empty pops of more names than the bounds hold, as a scanner of queue names.
		for i := range maxLifetimeQueues + 10 {
			name := fmt.Sprintf("ghost-%05d", i)
			a.recordPop(t0, queue.PopRequest{Queue: name}, queue.PopResult{Queue: name}, nil)
		}
		a.recordPush(t0, []queue.PushResult{{Queue: "real", Status: queue.StatusQueued}})
		require.Equal(t, map[string]*store.ActivityCounts{"real": {PushRequests: 1, PushMessages: 1}}, a.queues,
			"an empty pop makes no lifetime entry; a stored message does")
		f, _, err := a.take(minute.Add(time.Minute), false)
		require.NoError(t, err)
		require.Len(t, f.Queues, maxLifetimeQueues+1, "a bucket holds the bound's queues, and every one that moved a message")
		require.Equal(t, "real", f.Queues[len(f.Queues)-1].Queue)
		require.Equal(t, int64(maxLifetimeQueues+10), f.Workers[0].PopEmpty, "the process totals count every pop")
	})

	t.Run("PartialFlushKeepsTheMinuteSystemAggregate", func(t *testing.T) {
		t.Parallel()
		a := setup(t)
		f, _, err := a.take(minute, true)
		require.NoError(t, err)
		require.Equal(t, int64(2), f.Workers[0].PushMessages)
		require.Len(t, f.System, 1)
		again, _, err := a.take(minute, true)
		require.NoError(t, err)
		require.Empty(t, again.Workers, "counters were reset by the first flush")
		require.Empty(t, again.Queues)
		require.Len(t, again.System, 1, "the system aggregate is rewritten whole each time")
	})

	t.Run("RestoreAfterAFailedFlushAddsUp", func(t *testing.T) {
		t.Parallel()
		a := setup(t)
		_, taken, err := a.take(minute, true)
		require.NoError(t, err)
		a.recordPush(t0, []queue.PushResult{{Queue: "a", Status: queue.StatusQueued}})
		require.Zero(t, a.restore(taken))
		f, _, err := a.take(minute, true)
		require.NoError(t, err)
		require.Equal(t, int64(3), f.Workers[0].PushMessages)
		require.Equal(t, int64(2), f.Queues[0].PushRequests, "two requests touched queue a")
	})

	t.Run("RestoreDropsMinutesBeyondTheBound", func(t *testing.T) {
		t.Parallel()
		a := newRecorder("host", "w1", 42, t0, time.Minute)
		for i := range maxPendingMinutes + 1 {
			a.recordPush(t0.Add(time.Duration(i)*time.Minute), []queue.PushResult{{Queue: "a", Status: queue.StatusQueued}})
		}
		now := t0.Add(time.Duration(maxPendingMinutes+1) * time.Minute)
		_, taken, err := a.take(now.Truncate(time.Minute), false)
		require.NoError(t, err)
		require.Len(t, taken, maxPendingMinutes+1)
		a.recordPush(now, []queue.PushResult{{Queue: "a", Status: queue.StatusQueued}})
		require.Equal(t, 1, a.restore(taken), "the oldest minute goes")
		require.Len(t, a.buckets, maxPendingMinutes+1)
		require.NotContains(t, a.buckets, minute)
		require.Equal(t, int64(1), a.dropped)
	})

	t.Run("MinutesStayBoundedWithoutFlushes", func(t *testing.T) {
		t.Parallel()
		a := newRecorder("host", "w1", 42, t0, time.Minute)
		for i := range 3 * maxPendingMinutes {
			a.recordPush(t0.Add(time.Duration(i)*time.Minute), []queue.PushResult{{Queue: "a", Status: queue.StatusQueued}})
		}
		require.Len(t, a.buckets, maxPendingMinutes+1)
		require.Equal(t, int64(2*maxPendingMinutes-1), a.dropped)
		require.Equal(t, int64(3*maxPendingMinutes), a.total.PushMessages, "lifetime totals keep counting")
	})

	t.Run("ShortBucketsCloseWithinTheMinute", func(t *testing.T) {
		t.Parallel()
		a := newRecorder("host", "w1", 42, t0, 5*time.Second)
		require.Equal(t, 15*12, a.maxPending, "15 minutes of 5 s buckets are kept for a retry")
		a.recordPush(t0, []queue.PushResult{{Queue: "a", Status: queue.StatusQueued}})
		a.recordPush(t0.Add(5*time.Second), []queue.PushResult{{Queue: "a", Status: queue.StatusQueued}})
		a.observe(gaugeSample{at: t0, parked: map[string]int{"a": 3}, parkedAll: 3, system: make(systemSample)})
		f, taken, err := a.take(a.keyOf(t0.Add(5*time.Second)), false)
		require.NoError(t, err)
		require.Len(t, taken, 1, "the bucket of t0 closed 5 s later; the next one is open")
		require.Equal(t, time.Second*5, f.Width)
		require.Len(t, f.Queues, 1)
		require.Equal(t, t0.Truncate(5*time.Second), f.Queues[0].Bucket)
		require.Equal(t, int64(1), f.Queues[0].PushMessages)
		require.Len(t, f.Parked, 1)
		require.InDelta(t, 3.0/60, f.Parked[0].Parked, 1e-9, "a bucket's share of its minute's parked average")
		require.Len(t, a.buckets, 1, "the open bucket stays")
		require.Equal(t, minute, a.rateMinute, "rates stay per minute")
		require.Equal(t, int64(2), a.rateCur.PushMessages)
		require.Panics(t, func() { newRecorder("host", "w1", 42, t0, 7*time.Second) }, "a width must divide a minute")
	})

	t.Run("RatesAreThoseOfTheLastCompleteMinute", func(t *testing.T) {
		t.Parallel()
		a := newRecorder("host", "w1", 42, t0, time.Minute)
		for range 60 {
			a.recordPush(t0, []queue.PushResult{{Queue: "a", Status: queue.StatusQueued}})
		}
		a.recordPush(t0.Add(time.Minute), nil)
		require.Equal(t, minute, a.rateMinute.Add(-time.Minute))
		r := ratesOf(minute, a.rateLast)
		require.InDelta(t, 1.0, r.PushMessagesPerSecond, 1e-9)
		a.rollRates(minute.Add(5 * time.Minute))
		require.True(t, a.rateLast.IsZero(), "an idle minute has no rate")
	})
}

func TestIsDBError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{queue.Invalid("x", "bad"), false},
		{context.Canceled, false},
		{fmt.Errorf("%w: q", queue.ErrNotFound), false},
		{&queue.UnavailableError{Message: "push maintenance"}, false},
		{fmt.Errorf("%w: dial", queue.ErrUnavailable), true},
		{errors.New("syntax error"), true},
	} {
		require.Equal(t, tc.want, isDBError(tc.err), "%v", tc.err)
	}
}

func TestWindow(t *testing.T) {
	t.Parallel()
	to := time.Date(2026, 4, 26, 10, 3, 27, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		from, to time.Time
		finest   time.Duration // 0: a minute
		bucket   time.Duration
		points   int
		first    time.Time
		err      string
	}{
		{name: "DefaultHour", to: to, bucket: time.Minute, points: 60, first: time.Date(2026, 4, 26, 9, 4, 0, 0, time.UTC)},
		{name: "SixHours", from: to.Add(-6 * time.Hour), to: to, bucket: 5 * time.Minute, points: 72},
		{name: "Day", from: to.Add(-24 * time.Hour), to: to, bucket: 15 * time.Minute, points: 96},
		{name: "Week", from: to.Add(-7 * 24 * time.Hour), to: to, bucket: time.Hour, points: 168},
		{name: "Month", from: to.Add(-30 * 24 * time.Hour), to: to, bucket: 6 * time.Hour, points: 120},
		{name: "AlignedFrom", from: time.Date(2026, 4, 26, 10, 0, 0, 0, time.UTC), to: to, bucket: time.Minute, points: 4},
		{name: "HourOfFiveSecondBuckets", to: to, finest: 5 * time.Second, bucket: 5 * time.Second, points: 720,
			first: time.Date(2026, 4, 26, 9, 3, 30, 0, time.UTC)},
		{name: "SixHoursKeepFiveMinutes", from: to.Add(-6 * time.Hour), to: to, finest: time.Second,
			bucket: 5 * time.Minute, points: 72},
		{name: "Reversed", from: to, to: to.Add(-time.Hour), err: "from must be before to"},
		{name: "TooLong", from: to.Add(-400 * 24 * time.Hour), to: to, err: "from..to must span at most 366 days"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, err := newWindow(tc.from, tc.to, defaultWindow, 0, cmp.Or(tc.finest, time.Minute))
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.bucket, w.Bucket)
			buckets := w.Buckets()
			require.Len(t, buckets, tc.points)
			require.Equal(t, to.Truncate(tc.bucket), buckets[0], "newest bucket holds to")
			if !tc.first.IsZero() {
				require.Equal(t, tc.first, buckets[len(buckets)-1])
			}
		})
	}
}

func TestIntervalBucket(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		interval string
		bucket   time.Duration
		ok       bool
	}{
		{name: "Minute", interval: "minute", bucket: time.Minute, ok: true},
		{name: "Hour", interval: "hour", bucket: time.Hour, ok: true},
		{name: "Day", interval: "day", bucket: 24 * time.Hour, ok: true},
		{name: "Unknown", interval: "week"},
		{name: "CaseMatters", interval: "Hour"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bucket, ok := intervalBucket(tc.interval)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.bucket, bucket)
		})
	}
}

func TestSystemSample(t *testing.T) {
	t.Parallel()
	bucket := time.Date(2026, 4, 26, 10, 0, 0, 0, time.UTC)
	m := make(systemSample)
	for _, v := range []float64{4, 6, 5} {
		m.observe("memory", "rss_bytes", v)
	}
	doc, err := m.encode()
	require.NoError(t, err)
	require.JSONEq(t, `{"memory":{"rss_bytes":{"avg":5,"min":4,"max":6,"last":5}}}`, string(doc),
		"the sample count is not stored")

	stored, err := decodeSample(doc, 3, bucket)
	require.NoError(t, err)
	later := make(systemSample)
	later.observe("memory", "rss_bytes", 9)
	stored.merge(later, 1)
	require.Equal(t, api.Stat{Avg: 6, Min: 4, Max: 9, Last: 9}, stored.wire()["memory"]["rss_bytes"],
		"weighted by samples: (3×5 + 9) / 4")

	_, err = decodeSample([]byte(`{"memory":`), 3, bucket)
	require.ErrorContains(t, err, "decode system metrics of 2026-04-26T10:00:00Z")
}
