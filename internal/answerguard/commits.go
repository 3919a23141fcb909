package answerguard

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Commits held for a synchronous standby. With synchronous replication PostgreSQL
// answers a commit only once a synchronous standby confirms it. With none there to
// confirm (Patroni's synchronous_mode_strict while the other node is down, or
// synchronous_standby_names naming a standby that is gone) every commit waits, holding
// its locks, while reads are answered as usual: the server is not silent, so the
// deadline alone would keep each write waiting for statement_timeout plus Grace, and
// the statements that queue behind its locks would fail with statement_timeout.
//
// A statement still unanswered after the commit-stall delay is looked at from a
// connection of the guard's own, and again after each further delay: if its backend
// waits for a synchronous standby (pg_stat_activity's wait_event SyncRep), or for a
// lock a backend that does holds, the guard closes its connection, so the request
// fails as on a lost connection (a push goes to the spool). pgx then sends the server
// a cancel request for the connection, which ends the backend's wait: its commit
// completes on the primary alone, where readers see it, and reaches the standby when
// one streams again. It was never acknowledged to a client, and no one is left to read
// the success PostgreSQL answers it with. The cancel frees the backend and its locks,
// which would otherwise pile up with every attempt until a standby returns.
//
// From the first such statement until a commit is confirmed again, Stalled reports
// true: one commit of the guard's (a sentinel, which writes nothing) waits for the
// standby, and the stall ends when it is answered.

// sqlHeldForStandby tells whether the backend $1 waits for a synchronous standby, or
// for a lock held by a backend that does. wait_event is shown for the backends of the
// same role (this broker's and the other replicas') without any privilege; a blocker
// of another role reads as not held, and its waiters are left to the deadline (unless
// the role may read all statistics, pg_read_all_stats).
const sqlHeldForStandby = `SELECT a.wait_event IS NOT DISTINCT FROM 'SyncRep'
    OR EXISTS (SELECT 1 FROM pg_stat_activity b
               WHERE b.pid = ANY (pg_blocking_pids(a.pid)) AND b.wait_event = 'SyncRep')
FROM pg_stat_activity a WHERE a.pid = $1`

// sqlSentinel writes a transactional logical-decoding message (which any role may,
// and which changes no table), so that its commit waits for a synchronous standby like
// any write's. A transaction that only takes an id writes no WAL before its commit
// record, and PostgreSQL does not hold such a commit for a standby.
const sqlSentinel = `SELECT pg_logical_emit_message(true, 'queen', 'commit check')`

// probeTimeout bounds one look at a backend.
const probeTimeout = 2 * time.Second

// sentinelRetry is the pause before a sentinel commit that failed (its connection
// lost, the server gone) is tried again.
const sentinelRetry = time.Second

// commitWatch finds statements held for a synchronous standby; see above.
type commitWatch struct {
	after  time.Duration
	probe  *prober // the guard's: its connection, and the sentinel's configuration
	logger *slog.Logger

	stalled atomic.Bool
	ended   atomic.Uint64  // statements ended for it
	done    sync.WaitGroup // the sentinel
}

// WatchCommits makes g end statements held for a synchronous standby after after
// (see the package's commits.go), looking at them from a connection of the guard's
// own (made like the pool's, as Install found its configuration). Call it before the
// pool makes its first connection. after <= 0, or not below the deadline, watches
// nothing.
func (g *Guard) WatchCommits(after time.Duration) {
	if g == nil || after <= 0 || after >= g.deadline {
		return
	}
	g.commits = &commitWatch{after: after, probe: g.probe, logger: g.logger}
}

// Stalled reports whether commits wait for a synchronous standby: since a statement
// was ended for it, until a commit is confirmed again. False for a nil Guard or one
// that does not watch commits.
func (g *Guard) Stalled() bool {
	return g != nil && g.commits != nil && g.commits.stalled.Load()
}

// StalledStatements counts the statements ended because they were held for a
// synchronous standby.
func (g *Guard) StalledStatements() uint64 {
	if g == nil || g.commits == nil {
		return 0
	}
	return g.commits.ended.Load()
}

// Close stops the sentinel, if one waits, and closes the guard's own connection. The
// guard ends no statement afterwards for want of a standby, and the batches it times
// run to their last deadline.
func (g *Guard) Close() {
	if g == nil {
		return
	}
	g.probe.cancel()
	if g.commits != nil {
		g.commits.done.Wait()
	}
	g.probe.close()
}

// held reports whether the backend pid waits for a synchronous standby, directly or
// behind a lock; false when it cannot tell.
func (c *commitWatch) held(pid uint32) bool {
	if c.probe.stop.Err() != nil {
		return false
	}
	var held bool
	err := c.probe.query(func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, sqlHeldForStandby, pid).Scan(&held)
	})
	return err == nil && held
}

// endedOne counts a statement ended for a standby (its backend pid) and, on the
// first of a stall, warns and starts the sentinel.
func (c *commitWatch) endedOne(pid uint32) {
	c.ended.Add(1)
	if c.stalled.Swap(true) {
		return
	}
	if c.logger != nil {
		c.logger.Warn("PostgreSQL holds commits for a synchronous standby that does not confirm them: writes "+
			"kept waiting are ended (pushes go to the spool) until a commit is confirmed again",
			"after", c.after.String(), "backend_pid", pid)
	}
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		c.sentinel()
	}()
}

// sentinel commits a transaction that writes nothing until one is confirmed, then
// ends the stall. A commit that fails (the connection lost, the server gone: after a
// failover the next connection may reach a primary that confirms) is tried again.
func (c *commitWatch) sentinel() {
	started := time.Now()
	for c.probe.stop.Err() == nil {
		err := c.sentinelOnce()
		if err == nil {
			c.stalled.Store(false)
			if c.logger != nil {
				c.logger.Info("PostgreSQL confirms commits again", "stalled_for", time.Since(started).Round(time.Millisecond).String())
			}
			return
		}
		t := time.NewTimer(sentinelRetry)
		select {
		case <-c.probe.stop.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

func (c *commitWatch) sentinelOnce() error {
	conn, err := pgx.ConnectConfig(c.probe.stop, c.probe.cfg)
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.probe.stop), probeTimeout)
		defer cancel()
		_ = conn.Close(ctx)
	}()
	_, err = conn.Exec(c.probe.stop, sqlSentinel)
	if err != nil && c.probe.stop.Err() != nil {
		return errors.Join(err, c.probe.stop.Err())
	}
	return err
}
