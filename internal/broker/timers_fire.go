package broker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queenmq/queen/internal/store"
)

// Firing-loop tunables (docs/api.md, "Timers").
const (
	// timerLease is how long a firing broker holds the timers it claimed; a dead
	// claimant's timers become claimable after it.
	timerLease = 30 * time.Second
	// timerMaxSleep is the longest the loop sleeps between cycles.
	timerMaxSleep = time.Second
	// timerBusyRetry is the wait before trying again while another replica fires.
	timerBusyRetry = 200 * time.Millisecond
	// timerClaimBatch is the most timers claimed at once; timerCycleBatches bounds
	// the batches of one cycle, after which the lock is let go and taken again.
	timerClaimBatch   = 256
	timerCycleBatches = 8
	// TimerMaxAttempts is how many permanent failures a timer may have before it is
	// dead-lettered (queen.message_timers_dead, group __timer__).
	TimerMaxAttempts = 5
	// timerTransientDelay is the wait after a transient database failure (no attempt
	// is counted).
	timerTransientDelay = time.Second
	// timerMaxBackoff caps the backoff after a permanent failure.
	timerMaxBackoff = time.Minute
	// timerFireTimeout bounds one fire (delete the timer, append its message), which
	// shutdown lets finish.
	timerFireTimeout = 5 * time.Second
)

// timerLoop is the firing loop's per-broker state; the zero value is ready.
type timerLoop struct {
	once  sync.Once
	ch    chan struct{}
	fired atomic.Int64
}

func (t *timerLoop) wake() chan struct{} {
	t.once.Do(func() { t.ch = make(chan struct{}, 1) })
	return t.ch
}

func (t *timerLoop) kick() {
	select {
	case t.wake() <- struct{}{}:
	default:
	}
}

// TimersFired returns how many timers this broker's loop has fired.
func (b *Broker) TimersFired() int64 { return b.timers.fired.Load() }

// RunTimers fires due timers until ctx is done. Every replica runs it; each cycle
// is gated by the timers advisory lock, so one replica fires at a time and a
// timer's messages reach each (queue, partition) in due order. A cycle claims due
// timers for timerLease, then deletes each timer and appends its message in one
// transaction. The loop sleeps until the next timer is due, at most timerMaxSleep,
// and wakes early when this replica schedules a timer.
func (b *Broker) RunTimers(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.timers.wake():
		case <-t.C:
		}
		wait := b.timerCycle(ctx)
		t.Reset(wait)
	}
}

// timerCycle runs one cycle and returns how long to sleep before the next.
func (b *Broker) timerCycle(ctx context.Context) time.Duration {
	if push, _ := b.pauseFlags(ctx); push {
		return timerMaxSleep // push maintenance: messages wait like pushes would
	}
	lead, err := b.store.TimerLeadershipTry(ctx, 2*timerLease)
	if errors.Is(err, store.ErrJobLocked) {
		return timerBusyRetry
	}
	if err != nil {
		if ctx.Err() == nil {
			b.logger.Debug("timers: cannot take the firing lock", "err", err)
		}
		return timerMaxSleep
	}
	defer lead.Release(ctx)
	for range timerCycleBatches {
		token := b.cfg.Instance + "/" + b.ids.New()
		due, err := b.store.TimerClaimDue(ctx, token, timerLease, timerClaimBatch)
		if err != nil {
			if ctx.Err() == nil {
				b.logger.Debug("timers: claim failed", "err", err)
			}
			return timerMaxSleep
		}
		for i := range due {
			if ctx.Err() != nil {
				b.releaseClaims(ctx, token)
				return timerMaxSleep
			}
			b.fireTimer(ctx, token, &due[i])
		}
		if len(due) < timerClaimBatch {
			break
		}
	}
	wait, ok, err := b.store.TimerNextDue(ctx)
	if err != nil || !ok {
		return timerMaxSleep
	}
	return min(max(wait, 0), timerMaxSleep)
}

// releaseClaims hands back, on shutdown, the timers a cut-short cycle claimed.
func (b *Broker) releaseClaims(ctx context.Context, token string) {
	relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := b.store.TimerReleaseClaims(relCtx, token); err != nil {
		b.logger.Debug("timers: claims not released; they are claimable again after the lease", "err", err)
	}
}

// fireTimer appends one claimed timer's message, or records why it could not.
func (b *Broker) fireTimer(ctx context.Context, token string, d *store.DueTimer) {
	payload, err := d.Payload, error(nil)
	if d.PayloadZstd {
		payload, err = inflateTimerPayload(d.Payload) // validated at schedule: fails only on a foreign row
	}
	if err == nil {
		// A fire that started finishes even if shutdown begins meanwhile: cancelled
		// mid-commit, its outcome (and TimersFired) would be unknown.
		fireCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timerFireTimeout)
		err = b.store.TimerFire(fireCtx, token, d, payload)
		cancel()
	}
	switch {
	case err == nil:
		b.timers.fired.Add(1)
		b.waiters.notify(d.Queue)
		b.wakeup.announce(d.Queue)
		return
	case errors.Is(err, store.ErrTimerLost), ctx.Err() != nil:
		return // another broker owns it now, or shutting down: the lease runs out
	case store.IsTransient(err):
		if err := b.store.TimerRetryLater(ctx, token, d, timerTransientDelay); err != nil {
			b.logger.Debug("timers: cannot release a claim; it is claimable again after the lease", "err", err)
		}
		return
	}
	reason := "the message could not be appended"
	if errors.Is(err, store.ErrTimerRefused) || errors.Is(err, errTimerZstdBad) || errors.Is(err, errTimerZstdTooLarge) {
		reason = err.Error()
	}
	attempts := d.Attempts + 1
	if attempts >= TimerMaxAttempts {
		b.logger.Warn("timers: timer dead-lettered", "queue", d.Queue, "attempts", attempts, "err", err)
		if err := b.store.TimerBury(ctx, token, d, reason, attempts); err != nil {
			b.logger.Debug("timers: cannot dead-letter a timer", "err", err)
		}
		return
	}
	if _, err := b.store.TimerFail(ctx, token, d, reason, timerBackoff(attempts)); err != nil &&
		!errors.Is(err, store.ErrTimerLost) {
		b.logger.Debug("timers: cannot record a failure", "err", err)
	}
}

// timerBackoff is min(1000·2^attempts, 60000) ms.
func timerBackoff(attempts int) time.Duration {
	if attempts >= 6 {
		return timerMaxBackoff
	}
	return min(time.Second<<attempts, timerMaxBackoff)
}
