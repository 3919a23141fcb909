package analytics_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/analytics"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
	"github.com/queenmq/queen/internal/testlog"
)

// TestFlushIntervalWritesTheOpenMinute: with a FlushInterval under a minute, Run
// writes what the open minute counted so far within that interval and counts the rest
// afresh, so nothing is counted twice, the final flush included.
func TestFlushIntervalWritesTheOpenMinute(t *testing.T) {
	t.Parallel()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	svc := analytics.New(analytics.Config{Hostname: "h", WorkerID: "w1", PID: 7, FlushInterval: time.Second},
		st, testlog.Logger(t))
	push := func() {
		svc.RecordPush(time.Now(), []queue.PushResult{{Queue: "open-q", Status: queue.StatusQueued}})
	}
	written := func(want int64) func() bool {
		return func() bool { return opsSum(t, svc, "open-q").PushMessages == want }
	}

	push()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	require.Eventually(t, written(1), 10*time.Second, 20*time.Millisecond, "written within the interval, not at the minute's end")
	push()
	push()
	require.Eventually(t, written(3), 10*time.Second, 20*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	require.EqualValues(t, 3, opsSum(t, svc, "open-q").PushMessages, "the final flush adds nothing twice")
}
