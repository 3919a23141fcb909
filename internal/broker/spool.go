package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/spool"
	"github.com/queenmq/queen/internal/store"
)

// Spool fallback and drain (see docs/durability.md). A push goes to the spool instead of
// PostgreSQL while pushes are paused, before the daemon has reached the
// database at startup, and when the database turns out to be unreachable
// (queue.ErrUnavailable); it is answered "buffered" once the spool has fsynced it.
// One drainer per process replays the spool through the normal push path (dedup on
// the preserved transaction id, encryption, partition_lookup, wake-ups) in spool
// order, which keeps the order of each partition.
const (
	// spoolBypassWindow: after the database was found unreachable, pushes go straight
	// to the spool for this long instead of each waiting for its own failure.
	spoolBypassWindow = 500 * time.Millisecond
	// drainTimeout bounds one replayed batch.
	drainTimeout = 30 * time.Second
	// drainMaxBackoff caps the pause after a failed drain attempt: short, because until
	// the spool is replayed, pushes through other replicas can go before its records.
	drainMaxBackoff = time.Second
	// spoolRecheckEvery is how often the drainer asks a spool whose last append
	// failed whether it can be written again (a probe file's fsync at most).
	spoolRecheckEvery = time.Second
	// followWait bounds how long a push to a partition that still has spooled records
	// waits for the drainer to replay them before it is spooled behind them. The wait
	// keeps the partition's order without letting the spool grow as fast as pushes
	// come in (backpressure): the drainer catches up, and pushes go straight to the
	// database again.
	followWait = 2 * time.Second
)

// spooler is the broker's spool state; nil spool means the broker has none.
type spooler struct {
	sp         *spool.Spool
	interval   time.Duration
	maxBatch   int
	dbNotReady atomic.Bool  // set by the daemon until the schema is applied
	bypassTill atomic.Int64 // Unix nanos; see spoolBypassWindow
	dbDown     atomic.Bool  // the last push or replay found PostgreSQL unreachable
	failing    atomic.Bool  // the last append failed (logged once per episode)
	draining   atomic.Bool  // the drainer runs and its last attempt reached the database
	kick       chan struct{}
	progress   *drainProgress
}

func newSpooler(cfg Config) *spooler {
	return &spooler{sp: cfg.Spool, interval: cfg.SpoolFlushInterval, maxBatch: cfg.SpoolMaxBatch, kick: make(chan struct{}, 1),
		progress: newDrainProgress()}
}

// SetDatabaseReady tells the broker whether the database can be used at all. The
// daemon sets it false before serving and true once the schema is applied: in
// between, pushes go to the spool without touching the database.
func (b *Broker) SetDatabaseReady(ready bool) { b.spooler.dbNotReady.Store(!ready) }

// SpoolStats returns the spool's statistics; ok is false when the broker has no spool.
func (b *Broker) SpoolStats() (st spool.Stats, ok bool) {
	if b.spooler.sp == nil {
		return spool.Stats{}, false
	}
	return b.spooler.sp.Stats(), true
}

// SpoolAccepting reports whether pushes can go to the disk spool: there is one and
// its last append did not fail.
func (b *Broker) SpoolAccepting() bool {
	return b.spooler.sp != nil && b.spooler.sp.Stats().Healthy
}

// DatabaseReachable reports whether the last push or replay reached PostgreSQL (or
// none has failed yet): false from a push or replay that found it unreachable until
// one reaches it again. It runs no SQL. A primary that holds commits for a
// synchronous standby is reachable (queen_db_commits_stalled tells that apart).
func (b *Broker) DatabaseReachable() bool {
	return !b.spooler.dbNotReady.Load() && !b.spooler.dbDown.Load()
}

// spoolFirst reports whether a push should skip the database and go to the spool:
// before the schema is applied, just after the database was found unreachable, and
// while PostgreSQL holds commits for a synchronous standby (a push would wait for
// QUEEN_DB_COMMIT_STALL_MS and be spooled then).
func (b *Broker) spoolFirst() bool {
	s := b.spooler
	return s.sp != nil && (s.dbNotReady.Load() || time.Now().UnixNano() < s.bypassTill.Load() || b.store.CommitsStalled())
}

// spoolHolds reports whether the spool still holds records of a partition items go
// to, after waiting up to followWait for the drainer to replay them when it is
// making progress. A push for which it stays true is spooled behind those records
// (replayed in order) rather than stored ahead of them, so each partition keeps its
// push order across an outage.
func (b *Broker) spoolHolds(ctx context.Context, items []queue.PushItem) (bool, error) {
	sp := b.spooler.sp
	if sp == nil || !sp.HasPending(items) {
		return false, nil
	}
	t := time.NewTimer(followWait)
	defer t.Stop()
	for b.spooler.draining.Load() {
		changed := sp.Changed()
		if !sp.HasPending(items) {
			return false, nil
		}
		select {
		case <-changed:
		case <-t.C:
			return true, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return true, nil
}

// canSpool reports whether err (from the push path) lets the push fall back to the
// spool: only an unreachable database does (never a constraint or validation error,
// never a broker refusal).
func (b *Broker) canSpool(err error) bool {
	var ue *queue.UnavailableError
	return b.spooler.sp != nil && errors.Is(err, queue.ErrUnavailable) && !errors.As(err, &ue)
}

// markDatabaseDown starts the bypass window after an unreachable-database error.
func (b *Broker) markDatabaseDown() {
	b.spooler.dbDown.Store(true)
	b.spooler.bypassTill.Store(time.Now().Add(spoolBypassWindow).UnixNano())
}

// spoolPush writes items (validated, transaction ids assigned, payloads unsealed)
// to the spool and answers them "buffered". If the spool cannot be written the push
// fails as a whole with 503: nothing of it is kept, nothing claims success.
func (b *Broker) spoolPush(ctx context.Context, items []queue.PushItem, why string) ([]queue.PushResult, error) {
	s := b.spooler
	if err := s.sp.Append(ctx, items); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !s.failing.Swap(true) {
			b.logger.Error("spool write failed: pushes are refused with 503 until it can be written again",
				"reason", why, "dir", s.sp.Dir(), "err", err)
		}
		return nil, &queue.UnavailableError{Message: fmt.Sprintf(
			"push not stored: %s and the spool cannot be written (%s); retry later", why, spoolProblem(err))}
	}
	if s.failing.Swap(false) {
		b.logger.Info("spool writable again", "dir", s.sp.Dir())
	}
	results := make([]queue.PushResult, len(items))
	for i, it := range items {
		results[i] = queue.PushResult{
			Index: i, Status: queue.StatusBuffered, TransactionID: it.TransactionID,
			Queue: it.Queue, Partition: it.Partition, TraceID: it.TraceID,
		}
	}
	b.kickDrain()
	return results, nil
}

// spoolProblem names the cause of a failed append in words a client may see (no
// paths).
func spoolProblem(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "disk full"
	case errors.Is(err, spool.ErrFull):
		return "spool full: QUEEN_SPOOL_MAX_BYTES reached"
	case errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return "not writable"
	case errors.Is(err, spool.ErrClosed):
		return "the broker is shutting down"
	}
	return "I/O error"
}

// kickDrain wakes the drainer (it also runs on its own timer).
func (b *Broker) kickDrain() {
	select {
	case b.spooler.kick <- struct{}{}:
	default:
	}
}

// runDrain replays the spool until ctx is done: on a timer (FILE_BUFFER_FLUSH_MS)
// and when a push was spooled, skipping while pushes are paused and backing off
// while the database is unreachable.
func (b *Broker) runDrain(ctx context.Context) {
	s := b.spooler
	if s.sp == nil {
		return
	}
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	defer s.draining.Store(false)
	var (
		backoff     time.Duration
		pausedUntil time.Time
		paused      bool // logged the pause
		replayed    int  // records replayed since the spool was last empty
		rechecked   time.Time
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.kick:
		}
		// A spool marked failing by a refused append is healthy again once the cause
		// is gone (the drain freed room, the disk was fixed), not only after the next
		// push that happens to reach it: readiness and queen_spool_healthy follow.
		if time.Since(rechecked) >= spoolRecheckEvery {
			rechecked = time.Now()
			if s.sp.Recheck() == nil && s.failing.Swap(false) {
				b.logger.Info("spool writable again", "dir", s.sp.Dir())
			}
		}
		if time.Now().Before(pausedUntil) {
			continue
		}
		// pauseFlags, not the bare cache: at start-up the drainer can tick before
		// the first refresh, and must not replay a spool that the push pause holds.
		if push, _ := b.pauseFlags(ctx); push {
			s.progress.done(DrainPass{Held: true})
			continue
		}
		if b.store.CommitsStalled() {
			// A replay would wait QUEEN_DB_COMMIT_STALL_MS and fail; the store tells
			// when commits are confirmed again.
			continue
		}
		n, held, err := b.drain(ctx)
		replayed += n
		s.draining.Store(err == nil)
		// Published when the pass is over, after its log line.
		pass := DrainPass{Held: held, Replayed: n, Err: err}
		switch {
		case err == nil:
			if paused {
				b.logger.Info("spool drain resumed: the database is reachable again")
			}
			backoff, paused = 0, false
			if replayed > 0 {
				st := s.sp.Stats()
				b.logger.Info("spool drained", "replayed", replayed, "quarantined_total", st.QuarantinedRecords,
					"corrupt_regions_total", st.CorruptRegions)
				replayed = 0
			}
			s.progress.done(pass)
		case ctx.Err() != nil:
			return
		default:
			backoff = min(max(2*backoff, 100*time.Millisecond), drainMaxBackoff)
			pausedUntil = time.Now().Add(backoff)
			if errors.Is(err, queue.ErrUnavailable) {
				s.dbDown.Store(true)
			}
			switch {
			case paused:
			case errors.Is(err, queue.ErrUnavailable), errors.Is(err, queue.ErrTimeout):
				b.logger.Warn("spool drain paused; retrying", "err", err, "retry_in", backoff.String())
			default:
				// Not an outage, and not the records' fault: nothing is quarantined, the
				// records wait until an operator fixes the cause (a privilege, the schema).
				b.logger.Error("spool drain blocked: PostgreSQL refuses the replay for a reason of its own; "+
					"the records wait and are retried", "err", err, "retry_in", backoff.String())
			}
			paused = true
			s.progress.done(pass)
		}
	}
}

// drain replays batches until the spool is empty, pushes are paused, or a
// batch cannot be replayed now (the error). It returns the records replayed and
// whether the push pause stopped it.
func (b *Broker) drain(ctx context.Context) (total int, held bool, err error) {
	s := b.spooler
	for ctx.Err() == nil {
		if push, _ := b.pauseFlags(ctx); push {
			return total, true, nil
		}
		batch, err := s.sp.Peek(min(s.maxBatch, b.cfg.MaxPushItems))
		if err != nil || batch == nil {
			return total, false, err
		}
		// Asked again after the peek: a push spooled because the pause had begun
		// was appended after the flag changed, so a batch holding it sees the pause.
		if push, _ := b.Paused(); push {
			return total, true, nil
		}
		n, err := b.replay(ctx, batch)
		total += n
		s.draining.Store(err == nil)
		if err != nil {
			return total, false, err
		}
	}
	return total, false, ctx.Err()
}

// replay pushes one batch. The whole batch goes in one insert when it can; if it is
// refused because of a fault of some record (recordFault), the records are pushed one
// by one and the ones refused alone for such a fault are quarantined (poison). Any
// other failure (the database away, read-only, timing out, or refusing for a reason of
// its own) stops the replay, which waits and tries again, however long. Records are
// committed as they are done, so a failure later in the batch replays nothing twice.
// It returns the records pushed (queued or duplicate).
func (b *Broker) replay(ctx context.Context, batch *spool.Batch) (int, error) {
	s := b.spooler
	recs := batch.Records
	if !slices.ContainsFunc(recs, func(r spool.Record) bool { return r.Err != nil }) {
		items := make([]queue.PushItem, len(recs))
		for i, r := range recs {
			items[i] = r.Item
		}
		results, err := b.replayItems(ctx, items)
		if err == nil {
			if err := b.quarantineRefused(recs, results); err != nil {
				return 0, err
			}
			s.sp.Commit(batch, len(recs))
			return len(recs), nil
		}
		if !recordFault(err) {
			return 0, err
		}
	}
	done := 0
	for i, r := range recs {
		if r.Err != nil {
			if err := s.sp.Quarantine(r, r.Err.Error()); err != nil {
				return done, err
			}
			s.sp.Commit(batch, i+1)
			continue
		}
		results, err := b.replayItems(ctx, []queue.PushItem{r.Item})
		switch {
		case err == nil:
			if err := b.quarantineRefused(recs[i:i+1], results); err != nil {
				return done, err
			}
			done++
		case !recordFault(err):
			return done, err
		default:
			if err := s.sp.Quarantine(r, err.Error()); err != nil {
				return done, err
			}
		}
		s.sp.Commit(batch, i+1)
	}
	return done, nil
}

// quarantineRefused quarantines the records whose result is failed (a full queue);
// results are in the order of recs.
func (b *Broker) quarantineRefused(recs []spool.Record, results []queue.PushResult) error {
	for i, res := range results {
		if res.Status == queue.StatusFailed {
			if err := b.spooler.sp.Quarantine(recs[i], res.Error); err != nil {
				return err
			}
		}
	}
	return nil
}

// replayItems is the push path for spooled items: validation (an upstream record may
// break today's rules), fresh message ids, encryption per queue, the insert (which
// refreshes partition_lookup) and wake-ups. It ignores the push pause (the drainer
// checks it between batches).
func (b *Broker) replayItems(ctx context.Context, items []queue.PushItem) ([]queue.PushResult, error) {
	ctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	items = slices.Clone(items)
	if err := b.preparePush(items, "spool"); err != nil {
		return nil, err
	}
	results, err := b.insert(ctx, items)
	if err != nil {
		return nil, err
	}
	b.spooler.bypassTill.Store(0)
	return results, nil
}

// recordFault reports whether a replay failure is a fault of the records themselves:
// what the broker would answer a client pushing them now, with the database up, as a
// refusal of the request — a broken validation rule (a record an upstream Queen or an
// older release wrote), a refusal the broker words itself (a queue with
// encryptionEnabled and no key on this broker), or PostgreSQL refusing the data
// (store.IsDataFault). Only those are quarantined. Everything else says nothing about
// the record (the database unreachable, read-only or in recovery during a failover,
// shutting down, timing out, a missing privilege or function) and is waited out: the
// push was answered "buffered", a promise the spool keeps.
func recordFault(err error) bool {
	var (
		ve *queue.ValidationError
		ce *queue.ConflictError
	)
	if errors.Is(err, queue.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) || errors.Is(err, spool.ErrClosed) {
		return false
	}
	return errors.As(err, &ve) || errors.As(err, &ce) || store.IsDataFault(err)
}
