package maintenance_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/maintenance"
	"github.com/queenmq/queen/internal/progress"
)

// TestCyclesSignal: Runner.Cycles advances once per completed cycle, skips included,
// only after the cycle is recorded, so a waiter woken by it reads the cycle's
// effects at once; a wait the runner does not reach ends with a WaitError.
func TestCyclesSignal(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	// Long enough that the job is not due again by the skip below on a loaded machine;
	// the first cycle comes at a thousandth of it.
	const interval = time.Minute
	runs := 0
	j := &recordingJob{interval: interval, record: func() { runs++ }}
	r, err := maintenance.New(tb.st, []maintenance.Job{j}, prometheus.NewRegistry(),
		maintenance.Options{Instance: "a", Jitter: -1, FirstRun: 0.001})
	require.NoError(t, err)
	require.Zero(t, r.Cycles().Count())

	// The loop's first cycle: the job is due, so it runs, and both this replica's
	// state and the cluster-wide record say so when the waiter wakes.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	waitCtx, cancelWait := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancelWait()
	require.NoError(t, r.Cycles().WaitFor(waitCtx, 1))
	st := r.JobStates()[0]
	require.Equal(t, "success", st.LastResult, "the first cycle ran the job")
	require.NotNil(t, st.LastSuccessAt)
	var dbRuns int
	require.NoError(t, pgxPoolCount(t, tb.url, &dbRuns))
	require.Positive(t, dbRuns, "the run is committed before the signal")
	cancel()
	<-done
	require.NoError(t, pgxPoolCount(t, tb.url, &dbRuns))
	require.Equal(t, runs, dbRuns, "every run started is recorded (the loop is stopped)")
	cycles := r.Cycles().Count()
	require.GreaterOrEqual(t, cycles, uint64(runs))

	// A skip is a cycle too.
	out, _, err := r.RunCycle(t.Context(), j)
	require.NoError(t, err)
	require.Equal(t, maintenance.OutcomeNotDue, out)
	require.Equal(t, cycles+1, r.Cycles().Count())

	// With the loop stopped no cycle comes: the wait ends with what it saw.
	short, cancelShort := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancelShort()
	err = r.Cycles().WaitFor(short, cycles+2)
	var we *progress.WaitError
	require.ErrorAs(t, err, &we)
	require.Equal(t, cycles+1, we.Got)
	require.Equal(t, cycles+2, we.Want)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
