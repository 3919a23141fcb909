package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// maintenanceRefreshInterval is how often every replica re-reads the maintenance
// flags from queen.system_state (at most 5 s, with or without peers, where upstream
// relies on UDP sync), so a toggle through any replica applies everywhere within this
// time.
const maintenanceRefreshInterval = 2 * time.Second

// maintenanceRefreshTimeout bounds one refresh.
const maintenanceRefreshTimeout = 2 * time.Second

// errPushMaintenance answers a push while push maintenance mode is on and the broker
// has no spool (Config.Spool nil; the daemon always has one): it refuses the push
// (nothing stored, safe to retry) rather than claim a success it cannot keep.
var errPushMaintenance = &queue.UnavailableError{
	Message: "push maintenance mode is on and this broker has no spool; retry when maintenance is off",
}

// maintenance caches the two cluster-wide maintenance flags of queen.system_state.
type maintenance struct {
	push   atomic.Bool
	pop    atomic.Bool
	loaded atomic.Bool
	// loadMu makes concurrent first requests load the flags once.
	loadMu sync.Mutex
}

// Maintenance returns the cached maintenance flags: push (pushes go to the spool,
// or are refused with 503 without one) and pop (pops answer empty at once). It runs no SQL; the cache is at most
// about two seconds behind the database while Run is running.
func (b *Broker) Maintenance() (push, pop bool) {
	return b.maint.push.Load(), b.maint.pop.Load()
}

// MaintenanceStatus reads both flags from the database (refreshing the cache).
func (b *Broker) MaintenanceStatus(ctx context.Context) (push, pop bool, err error) {
	push, pop, err = b.store.MaintenanceGet(ctx)
	if err != nil {
		return false, false, err
	}
	b.setMaintenance(push, pop)
	return push, pop, nil
}

// SetPushMaintenance turns push maintenance mode on or off for the whole cluster and
// returns both flags as stored afterwards.
func (b *Broker) SetPushMaintenance(ctx context.Context, enabled bool) (push, pop bool, err error) {
	return b.setMaintenanceFlag(ctx, store.MaintenanceKeyPush, enabled)
}

// SetPopMaintenance turns pop maintenance mode on or off for the whole cluster and
// returns both flags as stored afterwards.
func (b *Broker) SetPopMaintenance(ctx context.Context, enabled bool) (push, pop bool, err error) {
	return b.setMaintenanceFlag(ctx, store.MaintenanceKeyPop, enabled)
}

func (b *Broker) setMaintenanceFlag(ctx context.Context, key string, enabled bool) (bool, bool, error) {
	if err := b.store.MaintenanceSet(ctx, key, enabled); err != nil {
		return false, false, err
	}
	push, pop, err := b.MaintenanceStatus(ctx)
	if err != nil {
		return false, false, err
	}
	b.logger.Info("maintenance mode set", "flag", key, "enabled", enabled, "push", push, "pop", pop)
	return push, pop, nil
}

func (b *Broker) setMaintenance(push, pop bool) {
	b.maint.push.Store(push)
	b.maint.pop.Store(pop)
	b.maint.loaded.Store(true)
}

// maintenanceFlags returns the cached flags, loading them first if no refresh has
// happened yet (a request that arrives before Run's first refresh). A failed load
// counts as "off": the request then meets the same database failure on its own.
func (b *Broker) maintenanceFlags(ctx context.Context) (push, pop bool) {
	if !b.maint.loaded.Load() {
		b.maint.loadMu.Lock()
		if !b.maint.loaded.Load() {
			loadCtx, cancel := context.WithTimeout(ctx, maintenanceRefreshTimeout)
			_, _, _ = b.MaintenanceStatus(loadCtx)
			cancel()
		}
		b.maint.loadMu.Unlock()
	}
	return b.Maintenance()
}

// runMaintenanceRefresh re-reads the flags every maintenanceRefreshInterval until
// ctx is done, logging changes made through other replicas.
func (b *Broker) runMaintenanceRefresh(ctx context.Context) {
	ticker := time.NewTicker(maintenanceRefreshInterval)
	defer ticker.Stop()
	failing := false
	for {
		oldPush, oldPop := b.Maintenance()
		wasLoaded := b.maint.loaded.Load()
		refreshCtx, cancel := context.WithTimeout(ctx, maintenanceRefreshTimeout)
		push, pop, err := b.MaintenanceStatus(refreshCtx)
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
