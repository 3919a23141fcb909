package appliance

import (
	"context"
	"time"
)

// Backoff is how WaitForDatabase spaces its attempts: First after the first failure,
// doubling up to Max.
type Backoff struct {
	First, Max time.Duration
}

// WaitForDatabase is the one start-up loop of both daemons: it calls try until it
// succeeds, fails with an error away does not call the database being away (returned
// as it is: a refusal that retrying cannot fix), or ctx ends (ctx.Err()). Before each
// retry it calls onWait with the attempt that failed (from 1), the delay before the
// next one and the error, for the daemon's log line and its systemd status. It returns
// the attempts made.
func WaitForDatabase(ctx context.Context, b Backoff, try func(context.Context) error, away func(error) bool,
	onWait func(attempt int, retryIn time.Duration, err error)) (int, error) {
	delay := b.First
	for attempt := 1; ; attempt++ {
		err := try(ctx)
		if err == nil {
			return attempt, nil
		}
		if ctx.Err() != nil {
			return attempt, ctx.Err()
		}
		if !away(err) {
			return attempt, err
		}
		onWait(attempt, delay, err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return attempt, ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, b.Max)
	}
}
