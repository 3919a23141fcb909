package daemon

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
		lc := newLifecycle(t.Context())
		first, second := lc.newTier(lc.base), lc.newTier(lc.base)
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
		first.start(component("first"))
		second.start(component("second"))
		boom := errors.New("boom")
		second.start(func(context.Context) error { return boom })

		<-lc.stopping.Done()
		require.ErrorIs(t, context.Cause(lc.stopping), boom)
		synctest.Wait()
		require.Empty(t, stopped, "a failure stops nothing by itself")
		second.stop()
		first.stop()
		require.Equal(t, []string{"second", "first"}, stopped)
		require.ErrorIs(t, lc.wait(), boom)
	})
}

// TestLifecycleStopsOnTheCallersCancel: cancelling the caller's context (a signal)
// cancels stopping with the caller's cause and only the tiers made from stopping; wait
// then returns nil.
func TestLifecycleStopsOnTheCallersCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		lc := newLifecycle(ctx)
		early, late := lc.newTier(lc.stopping), lc.newTier(lc.base)
		earlyDone := make(chan struct{})
		early.start(func(ctx context.Context) error { <-ctx.Done(); close(earlyDone); return nil })
		late.start(func(ctx context.Context) error { <-ctx.Done(); return nil })

		signal := errors.New("received terminated")
		cancel(signal)
		<-earlyDone
		require.ErrorIs(t, context.Cause(lc.stopping), signal)
		synctest.Wait()
		require.NoError(t, late.ctx.Err(), "a tier made from base runs until its stage stops it")
		early.stop()
		late.stop()
		require.NoError(t, lc.wait())
	})
}
