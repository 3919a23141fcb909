package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queenmq/queen/internal/store"
)

// wakeup carries wake-ups between replicas through PostgreSQL LISTEN/NOTIFY (never
// inside the push transaction). Pushes enqueue queue names after their commit; one
// sender coalesces everything that arrived while its previous NOTIFY was in flight
// into one statement, and sends none while no other replica listens (a notifying
// commit flushes the WAL and takes a database-wide lock). A lost notification only
// costs latency: parked pops also re-check on a timer, and every (re)connection of
// the listener wakes all local waiters.
type wakeup struct {
	mu      sync.Mutex
	pending map[string]struct{}
	kick    chan struct{}

	sent, skipped atomic.Uint64
}

func newWakeup() *wakeup {
	return &wakeup{pending: make(map[string]struct{}), kick: make(chan struct{}, 1)}
}

// announce queues a queue name for the next NOTIFY; it never blocks.
func (wu *wakeup) announce(queue string) {
	wu.mu.Lock()
	wu.pending[queue] = struct{}{}
	wu.mu.Unlock()
	select {
	case wu.kick <- struct{}{}:
	default:
	}
}

func (wu *wakeup) take() []string {
	wu.mu.Lock()
	defer wu.mu.Unlock()
	if len(wu.pending) == 0 {
		return nil
	}
	out := make([]string, 0, len(wu.pending))
	for q := range wu.pending {
		out = append(out, q)
	}
	clear(wu.pending)
	return out
}

// Run serves cross-replica wake-ups until ctx is done: it listens for other replicas'
// announcements and sends this replica's. It also refreshes the push/pop pause flags
// every 2 s. The daemon runs it once the schema exists.
func (b *Broker) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		b.store.Listen(ctx, store.ListenHandlers{
			NotifyFunc: b.waiters.notify,
			ConnectedFunc: func() {
				b.logger.Debug("wake-up listener connected")
				b.waiters.notifyAll()
			},
			ErrorFunc: func(err error, retryIn time.Duration) {
				b.logger.Warn("wake-up listener lost its connection; parked pops fall back to timed re-checks",
					"err", err, "retry_in", retryIn.String())
			},
		})
	}()
	go func() {
		defer wg.Done()
		b.sendWakeups(ctx)
	}()
	wg.Go(func() { b.runPauseRefresh(ctx) })
	wg.Go(func() { b.runDrain(ctx) })
	wg.Wait()
}

// wakeListenersRecheck is how long a replica trusts its answer to "does another
// replica listen?": a replica that starts listening meanwhile gets no wake-ups for at
// most this long (its parked pops re-check on their timer, and its listener wakes
// them all once connected).
const wakeListenersRecheck = time.Second

// WakeNotifications counts this replica's batches of cross-replica wake-ups: sent as
// a NOTIFY (the statement succeeded), or skipped because no other replica listened.
type WakeNotifications struct {
	Sent, Skipped uint64
}

// WakeNotifications reports the counts so far.
func (b *Broker) WakeNotifications() WakeNotifications {
	return WakeNotifications{Sent: b.wakeup.sent.Load(), Skipped: b.wakeup.skipped.Load()}
}

func (b *Broker) sendWakeups(ctx context.Context) {
	var others bool
	var checked time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.wakeup.kick:
		}
		queues := b.wakeup.take()
		if len(queues) == 0 {
			continue
		}
		sendCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if time.Since(checked) >= wakeListenersRecheck {
			var err error
			if others, err = b.store.OtherWakeListeners(sendCtx); err != nil {
				others = true // unknown: send
			}
			checked = time.Now()
		}
		var err error
		switch {
		case !others:
			b.wakeup.skipped.Add(1)
		default:
			if err = b.store.QueueNotify(sendCtx, queues); err == nil {
				b.wakeup.sent.Add(1)
			}
		}
		cancel()
		if err != nil && ctx.Err() == nil {
			b.logger.Debug("wake-up notification not sent; remote pops re-check on their timer", "err", err)
		}
	}
}
