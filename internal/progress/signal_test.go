package progress_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/progress"
)

func TestWaitForIsWokenByTheCycleThatReachesTheCount(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var s progress.Signal
		done := make(chan error, 1)
		go func() { done <- s.WaitFor(t.Context(), 2) }()

		synctest.Wait()
		s.Advance()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("WaitFor(2) returned after one cycle: %v", err)
		default:
		}

		s.Advance()
		synctest.Wait()
		select {
		case err := <-done:
			require.NoError(t, err)
		default:
			t.Fatal("WaitFor(2) still waits after the second cycle")
		}
		require.EqualValues(t, 2, s.Count())
	})
}

func TestWaitForReturnsAtOnceWhenTheCountIsReached(t *testing.T) {
	t.Parallel()
	var s progress.Signal
	s.Advance()
	s.Advance()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.NoError(t, s.WaitFor(ctx, 2), "a count already reached wins over a done context")
	require.NoError(t, s.WaitFor(ctx, 0))
}

func TestWaitForTimesOutWithTheCountItSaw(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var s progress.Signal
		s.Advance()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		start := time.Now()
		err := s.WaitFor(ctx, 3)

		var we *progress.WaitError
		require.ErrorAs(t, err, &we)
		require.Equal(t, progress.WaitError{Want: 3, Got: 1, Err: context.DeadlineExceeded}, *we)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, 5*time.Second, time.Since(start), "it waits the whole deadline, no longer")
		require.Equal(t, "progress: 1 of 3 cycles completed when the wait ended: context deadline exceeded", err.Error())
	})
}

func TestWaitForReportsTheContextCause(t *testing.T) {
	t.Parallel()
	var s progress.Signal
	stopped := errors.New("loop stopped")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(stopped)
	require.ErrorIs(t, s.WaitFor(ctx, 1), stopped)
}

func TestWatchChannelClosesAtTheNextCycle(t *testing.T) {
	t.Parallel()
	var s progress.Signal
	n, next := s.Watch()
	require.Zero(t, n)
	n2, next2 := s.Watch()
	require.Zero(t, n2)
	require.Equal(t, next, next2, "watchers of one cycle share its channel")
	select {
	case <-next:
		t.Fatal("closed before any cycle")
	default:
	}
	s.Advance()
	<-next // closed, or the test hangs
	n, after := s.Watch()
	require.EqualValues(t, 1, n)
	require.NotEqual(t, next, after, "a fresh channel for the next cycle")
}

// TestConcurrentWaitersSeeEveryCycle runs under -race: waiters for every count up
// to the last all return once the loop has advanced that far.
func TestConcurrentWaitersSeeEveryCycle(t *testing.T) {
	t.Parallel()
	const cycles = 200
	var s progress.Signal
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	errs := make(chan error, cycles)
	var wg sync.WaitGroup
	for i := range uint64(cycles) {
		wg.Go(func() { errs <- s.WaitFor(ctx, i+1) })
	}
	wg.Go(func() {
		for range cycles {
			s.Advance()
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, cycles, s.Count())
}
