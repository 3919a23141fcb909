package appliance

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// TestLifecycleFailureStartsTheStop: a component that fails cancels stopping with its
// error, which wait returns; the other components keep running until the stage that
// owns their tier stops it, so the stages, not the failure, set the order.
func TestLifecycleFailureStartsTheStop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		lc := NewLifecycle(t.Context())
		first, second := lc.NewTier(), lc.NewTier()
		var mu sync.Mutex
		var stopped []string
		component := func(name string) func(context.Context) error {
			return func(ctx context.Context) error {
				<-ctx.Done()
				mu.Lock()
				defer mu.Unlock()
				stopped = append(stopped, name)
				return nil
			}
		}
		first.Start(component("first"))
		second.Start(component("second"))
		boom := errors.New("boom")
		second.Start(func(context.Context) error { return boom })

		<-lc.Stopping().Done()
		require.ErrorIs(t, context.Cause(lc.Stopping()), boom)
		synctest.Wait()
		require.Empty(t, stopped, "a failure stops nothing by itself")
		second.Stop()
		first.Stop()
		require.Equal(t, []string{"second", "first"}, stopped)
		require.ErrorIs(t, lc.Wait(), boom)
	})
}

// TestLifecycleStopsOnTheCallersCancel: cancelling the caller's context (a signal)
// cancels stopping with the caller's cause and only the early tiers; wait
// then returns nil.
func TestLifecycleStopsOnTheCallersCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		lc := NewLifecycle(ctx)
		early, late := lc.NewEarlyTier(), lc.NewTier()
		earlyDone := make(chan struct{})
		early.Start(func(ctx context.Context) error { <-ctx.Done(); close(earlyDone); return nil })
		late.Start(func(ctx context.Context) error { <-ctx.Done(); return nil })

		signal := errors.New("received terminated")
		cancel(signal)
		<-earlyDone
		require.ErrorIs(t, context.Cause(lc.Stopping()), signal)
		synctest.Wait()
		require.NoError(t, late.ctx.Err(), "a tier made by NewTier runs until its stage stops it")
		early.Stop()
		late.Stop()
		require.NoError(t, lc.Wait())
	})
}
