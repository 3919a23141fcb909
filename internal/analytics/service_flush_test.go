package analytics_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/analytics"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/progress"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
	"github.com/queenmq/queen/internal/testlog"
)

// flushWait bounds a wait for Run's flushes; they come every second or so.
const flushWait = 10 * time.Second

// waitFlushes waits, within flushWait, until svc has completed n flushes.
func waitFlushes(t *testing.T, svc *analytics.Service, n uint64, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), flushWait)
	defer cancel()
	require.NoError(t, svc.Flushes().WaitFor(ctx, n), msg)
}

// waitFlushedUntil checks now and after each flush of svc until check returns nil,
// and fails the test with check's last error if flushWait passes first. For
// conditions a given flush may miss (Run writes only closed buckets on the tick that
// closes one), where waitFlushes would need to know which flush writes them.
func waitFlushedUntil(t *testing.T, svc *analytics.Service, check func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), flushWait)
	defer cancel()
	for {
		n := svc.Flushes().Count()
		err := check()
		if err == nil {
			return
		}
		if werr := svc.Flushes().WaitFor(ctx, n+1); werr != nil {
			t.Fatalf("%v; last check: %v", werr, err)
		}
	}
}

// TestFlushIntervalWritesTheOpenMinute: with a FlushInterval under a minute, Run
// writes what the open minute counted so far within that interval and counts the rest
// afresh, so nothing is counted twice, the final flush included.
func TestFlushIntervalWritesTheOpenMinute(t *testing.T) {
	t.Parallel()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	svc := analytics.New(analytics.Config{Hostname: "h", WorkerID: "w1", PID: 7, FlushInterval: time.Second, Bucket: time.Minute},
		st, testlog.Logger(t))
	push := func() {
		svc.RecordPush(time.Now(), []queue.PushResult{{Queue: "open-q", Status: queue.StatusQueued}})
	}
	pushed := func() int64 { return opsSum(t, svc, "open-q").PushMessages }

	push()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	// Run's first flush writes the push made before it started: either the open
	// minute so far, or the minute that has just closed.
	waitFlushes(t, svc, 1, "written within the interval, not at the minute's end")
	require.EqualValues(t, 1, pushed())
	push()
	push()
	waitFlushedUntil(t, svc, func() error {
		if n := pushed(); n != 3 {
			return fmt.Errorf("%d messages written, want 3", n)
		}
		return nil
	})
	cancel()
	require.NoError(t, <-done)
	require.EqualValues(t, 3, pushed(), "the final flush adds nothing twice")
}

// TestFlushesCountsSuccessfulFlushesOnly: Flush advances Flushes once it has
// written; a flush the database refuses does not, and a wait for it times out.
func TestFlushesCountsSuccessfulFlushesOnly(t *testing.T) {
	t.Parallel()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(st.Close) // closed again below; a second Close does nothing
	svc := analytics.New(analytics.Config{Hostname: "h", WorkerID: "w1", PID: 7, Bucket: time.Minute}, st, testlog.Logger(t))
	require.Zero(t, svc.Flushes().Count())

	svc.RecordPush(time.Now(), []queue.PushResult{{Queue: "count-q", Status: queue.StatusQueued}})
	_, err = svc.Flush(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, 1, svc.Flushes().Count())
	require.EqualValues(t, 1, opsSum(t, svc, "count-q").PushMessages, "written when the signal came")
	_, err = svc.Flush(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, 2, svc.Flushes().Count(), "every successful flush counts")

	st.Close()
	svc.RecordPush(time.Now(), []queue.PushResult{{Queue: "count-q", Status: queue.StatusQueued}})
	_, err = svc.Flush(t.Context())
	require.ErrorIs(t, err, queue.ErrUnavailable)
	require.EqualValues(t, 2, svc.Flushes().Count(), "a failed flush is not counted")

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err = svc.Flushes().WaitFor(ctx, 3)
	var we *progress.WaitError
	require.ErrorAs(t, err, &we)
	require.Equal(t, progress.WaitError{Want: 3, Got: 2, Err: context.DeadlineExceeded}, *we)
}
