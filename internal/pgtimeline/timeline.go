// Package pgtimeline watches the timeline of the PostgreSQL primary a pool's new
// connections reach.
//
// PostgreSQL starts a new timeline each time a standby is promoted, so on one database
// the primary's timeline only grows. A new connection that finds the primary on an
// earlier timeline than one a connection of the same process reached before has
// reached a former primary that takes writes again: a split brain, such as a failover
// manager that let a resumed primary take the lead back (docs/high-availability.md).
// What was committed on the later timeline, acknowledged writes among it, is not on it.
// A Watch, installed on a pgx pool, reads the timeline on every new connection, keeps
// the newest connection's, counts the connections that found an earlier one (once per
// timeline) and logs each such timeline once. It refuses nothing: refusing the primary
// would not bring the lost commits back, and one that took the lead back is the only
// one left to write to.
package pgtimeline

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sqlTimeline reads the primary's timeline from the name of its current WAL file (its
// first 8 hexadecimal digits), which needs no privilege; 0 on a standby.
const sqlTimeline = `SELECT CASE WHEN pg_is_in_recovery() THEN 0
    ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer END`

// Watch remembers the timelines a pool's new connections found.
type Watch struct {
	logger *slog.Logger // nil: no log

	mu       sync.Mutex
	highest  int64 // the latest timeline a connection found
	reported int64 // the earlier timeline last logged, so each is logged once

	current     atomic.Int64
	regressions atomic.Uint64
}

// Install puts a Watch on cfg that reads the timeline of every new connection, logging
// on logger (nil: silently) each earlier timeline found. It chains cfg's AfterConnect,
// so it goes after the caller's own hooks.
func Install(cfg *pgxpool.Config, logger *slog.Logger) *Watch {
	w := &Watch{logger: logger}
	next := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if next != nil {
			if err := next(ctx, c); err != nil {
				return err
			}
		}
		w.observe(ctx, c)
		return nil
	}
	return w
}

// Current is the timeline the newest connection to a primary found (0: none yet).
func (w *Watch) Current() int64 { return w.current.Load() }

// Regressions counts the new connections that found an earlier timeline than a
// connection before them, once per timeline.
func (w *Watch) Regressions() uint64 { return w.regressions.Load() }

// observe reads the timeline on a new connection and notes it. A failure to read it (a
// server without these functions, a connection that broke) is not the connection's: it
// is left out.
func (w *Watch) observe(ctx context.Context, c *pgx.Conn) {
	var tl int64
	if err := c.QueryRow(ctx, sqlTimeline).Scan(&tl); err != nil || tl <= 0 {
		return
	}
	w.note(tl, c.PgConn().Conn().RemoteAddr().String())
}

// note records that a connection to addr found the primary on timeline tl.
func (w *Watch) note(tl int64, addr string) {
	w.current.Store(tl)
	w.mu.Lock()
	defer w.mu.Unlock()
	if tl >= w.highest {
		w.highest, w.reported = tl, 0
		return
	}
	if tl == w.reported {
		return
	}
	w.reported = tl
	w.regressions.Add(1)
	if w.logger != nil {
		w.logger.Error("PostgreSQL's primary is on an earlier timeline than this process reached before: "+
			"a former primary takes writes again, and what was committed on the later timeline is not on it",
			"timeline", tl, "latest_seen", w.highest, "server", addr)
	}
}
