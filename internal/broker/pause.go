package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// The push/pop pause: two cluster-wide switches kept in queen.system_state. With
// pushes paused, pushes go to the spool (replayed once the pause ends); with pops
// paused, pops answer empty at once. The HTTP API (/api/v1/system/maintenance and
// /api/v1/system/maintenance/pop, fields maintenanceMode and popMaintenanceMode), the
// dashboard and the original project call this maintenance mode; the Go code says
// pause to keep it apart from the periodic jobs of internal/maintenance.

// pauseRefreshInterval is how often every replica re-reads the pause flags from
// queen.system_state (at most 5 s, with or without peers, where upstream relies on
// UDP sync), so a toggle through any replica applies everywhere within this time.
const pauseRefreshInterval = 2 * time.Second

// pauseRefreshTimeout bounds one refresh.
const pauseRefreshTimeout = 2 * time.Second

// errPushPaused answers a push while pushes are paused and the broker
// has no spool (Config.Spool nil; the daemon always has one): it refuses the push
// (nothing stored, safe to retry) rather than claim a success it cannot keep.
var errPushPaused = &queue.UnavailableError{
	Message: "push maintenance mode is on and this broker has no spool; retry when maintenance is off",
}

// pause caches the two cluster-wide pause flags of queen.system_state.
type pause struct {
	push   atomic.Bool
	pop    atomic.Bool
	loaded atomic.Bool
	// loadMu makes concurrent first requests load the flags once.
	loadMu sync.Mutex

	// Every read of the flags from the database takes a ticket before it queries;
	// only a read newer than the last one stored is stored, so a periodic refresh
	// that read the old value cannot overwrite, after the fact, what a toggle through
	// this broker read once it had written the new one.
	mu      sync.Mutex
	tickets uint64 // tickets handed out
	stored  uint64 // ticket of the read last stored
	// popOn is closed when pops become paused, so parked pops answer at once; a new
	// one is made when they resume. Guarded by mu; nil until first asked for.
	popOn chan struct{}
}

// popPausedSignal returns a channel that is closed once pops are paused (already
// closed while they are).
func (p *pause) popPausedSignal() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.popOn == nil {
		p.popOn = make(chan struct{})
		if p.pop.Load() {
			close(p.popOn)
		}
	}
	return p.popOn
}

// ticket numbers a read of the flags about to start.
func (p *pause) ticket() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tickets++
	return p.tickets
}

// store keeps what the read of ticket t found, unless a read that started later has
// been stored already.
func (p *pause) store(t uint64, push, pop bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t < p.stored {
		return
	}
	p.stored = t
	was := p.pop.Load()
	p.push.Store(push)
	p.pop.Store(pop)
	p.loaded.Store(true)
	if p.popOn != nil && pop != was {
		if pop {
			close(p.popOn)
		} else {
			p.popOn = make(chan struct{})
		}
	}
}

// Paused returns the cached pause flags: push (pushes go to the spool, or are
// refused with 503 without one) and pop (pops answer empty at once). It runs no SQL;
// the cache is at most about two seconds behind the database while Run is running.
func (b *Broker) Paused() (push, pop bool) {
	return b.pause.push.Load(), b.pause.pop.Load()
}

// PauseStatus reads both pause flags from the database (refreshing the cache).
func (b *Broker) PauseStatus(ctx context.Context) (push, pop bool, err error) {
	t := b.pause.ticket()
	push, pop, err = b.store.MaintenanceGet(ctx)
	if err != nil {
		return false, false, err
	}
	b.pause.store(t, push, pop)
	return push, pop, nil
}

// SetPushPause pauses or resumes pushes for the whole cluster and returns both
// flags as stored afterwards.
func (b *Broker) SetPushPause(ctx context.Context, enabled bool) (push, pop bool, err error) {
	return b.setPauseFlag(ctx, store.MaintenanceKeyPush, enabled)
}

// SetPopPause pauses or resumes pops for the whole cluster and returns both flags
// as stored afterwards.
func (b *Broker) SetPopPause(ctx context.Context, enabled bool) (push, pop bool, err error) {
	return b.setPauseFlag(ctx, store.MaintenanceKeyPop, enabled)
}

func (b *Broker) setPauseFlag(ctx context.Context, key string, enabled bool) (bool, bool, error) {
	if err := b.store.MaintenanceSet(ctx, key, enabled); err != nil {
		return false, false, err
	}
	push, pop, err := b.PauseStatus(ctx)
	if err != nil {
		return false, false, err
	}
	b.logger.Info("maintenance mode set", "flag", key, "enabled", enabled, "push", push, "pop", pop)
	return push, pop, nil
}

// pauseFlags returns the cached flags, loading them first if no refresh has
// happened yet (a request that arrives before Run's first refresh). A failed load
// counts as "off": the request then meets the same database failure on its own.
func (b *Broker) pauseFlags(ctx context.Context) (push, pop bool) {
	if !b.pause.loaded.Load() {
		b.pause.loadMu.Lock()
		if !b.pause.loaded.Load() {
			loadCtx, cancel := context.WithTimeout(ctx, pauseRefreshTimeout)
			_, _, _ = b.PauseStatus(loadCtx)
			cancel()
		}
		b.pause.loadMu.Unlock()
	}
	return b.Paused()
}

// runPauseRefresh re-reads the flags every pauseRefreshInterval until
// ctx is done, logging changes made through other replicas.
func (b *Broker) runPauseRefresh(ctx context.Context) {
	ticker := time.NewTicker(pauseRefreshInterval)
	defer ticker.Stop()
	failing := false
	for {
		oldPush, oldPop := b.Paused()
		wasLoaded := b.pause.loaded.Load()
		refreshCtx, cancel := context.WithTimeout(ctx, pauseRefreshTimeout)
		push, pop, err := b.PauseStatus(refreshCtx)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			if !failing {
				b.logger.Warn("maintenance flags not refreshed; keeping the cached values", "err", err,
					"push", oldPush, "pop", oldPop)
			}
			failing = true
		case err == nil:
			failing = false
			if wasLoaded && (push != oldPush || pop != oldPop) {
				b.logger.Info("maintenance mode changed", "push", push, "pop", pop)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}
