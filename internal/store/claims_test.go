package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/store"
)

// A job's claim and the timer loop's each hold a pool connection while their
// statements take others. With a pool of two and both claims open, neither cycle
// could run a statement, and every request waited with them (seen with
// DB_POOL_SIZE=2: /health answered "disconnected" until the jobs timed out, minutes
// later). Here both cycles start together, each waits (up to a bound) for the other
// to hold its claim too, then runs a statement: both must finish.
func TestClaimsLeaveTheSmallestPoolAConnection(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t, 2)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	var claimed sync.WaitGroup
	claimed.Add(2)
	bothClaimed := make(chan struct{})
	go func() { claimed.Wait(); close(bothClaimed) }()
	// cycle runs one statement while holding a claim, after the other cycle holds its
	// own or half a second has passed (the store may make it wait for this one).
	cycle := func() error {
		claimed.Done()
		select {
		case <-bothClaimed:
		case <-time.After(500 * time.Millisecond):
		}
		stmtCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return st.Ping(stmtCtx)
	}

	errs := make(chan error, 2)
	go func() {
		lease, err := st.JobClaimCycle(ctx, store.JobClaim{Name: "claims-test", Interval: time.Minute,
			Hold: time.Minute, Instance: "t"})
		if err != nil {
			errs <- err
			return
		}
		runErr := cycle()
		errs <- errors.Join(runErr, lease.Finish(ctx, 0, 0, runErr))
	}()
	go func() {
		lead, err := st.TimerLeadershipTry(ctx, time.Minute)
		if err != nil {
			errs <- err
			return
		}
		defer lead.Release(ctx)
		errs <- cycle()
	}()
	for range 2 {
		require.NoError(t, <-errs, "a cycle's statement while both claims were wanted")
	}
	require.NoError(t, st.Ping(ctx), "the pool after both cycles")
}
