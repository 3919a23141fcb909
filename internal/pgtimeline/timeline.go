// Package pgtimeline watches the timeline of the PostgreSQL primary a pool's new
// connections reach.
//
// PostgreSQL starts a new timeline each time a standby is promoted, so on one database
// the primary's timeline only grows. A new connection that finds the primary on an
// earlier timeline than one a connection of the same process reached before, on the
// same database cluster (system identifier), has reached a former primary that takes
// writes again: a split brain, such as a failover manager that let a resumed primary
// take the lead back (docs/high-availability.md). What was committed on the later
// timeline, acknowledged writes among it, is not on it. A Watch, installed on a pgx
// pool, reads the timeline on every new connection, keeps the newest connection's and
// whether it is behind, counts the connections that found an earlier one (once per
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

// sqlTimeline reads the database cluster's system identifier (timelines are compared
// within one cluster only: a copy made by a base backup keeps it, another cluster has
// its own) and the primary's timeline, from the name of its current WAL file (its first
// 8 hexadecimal digits); neither needs a privilege. The timeline is 0 on a standby.
const sqlTimeline = `SELECT (SELECT system_identifier FROM pg_control_system()),
    CASE WHEN pg_is_in_recovery() THEN 0
    ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer END`

// Watch remembers the timelines a pool's new connections found.
type Watch struct {
	logger *slog.Logger // nil: no log

	mu       sync.Mutex
	system   int64 // the system identifier of the cluster highest belongs to
	highest  int64 // the latest timeline a connection to that cluster found
	reported int64 // the earlier timeline last logged, so each is logged once

	current     atomic.Int64
	behind      atomic.Bool
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

// Behind reports whether the newest connection to a primary found an earlier timeline
// than a connection to the same cluster before it.
func (w *Watch) Behind() bool { return w.behind.Load() }

// Regressions counts the new connections that found an earlier timeline than a
// connection to the same cluster before them, once per timeline.
func (w *Watch) Regressions() uint64 { return w.regressions.Load() }

// observe reads the timeline on a new connection and notes it. A failure to read it (a
// server without these functions, a connection that broke) is not the connection's: it
// is left out.
func (w *Watch) observe(ctx context.Context, c *pgx.Conn) {
	var system, tl int64
	if err := c.QueryRow(ctx, sqlTimeline).Scan(&system, &tl); err != nil || tl <= 0 {
		return
	}
	w.note(system, tl, c.PgConn().Conn().RemoteAddr().String())
}

// note records that a connection to addr found the primary of the cluster system on
// timeline tl.
func (w *Watch) note(system, tl int64, addr string) {
	w.current.Store(tl)
	w.mu.Lock()
	defer w.mu.Unlock()
	if system != w.system {
		if w.system != 0 && w.logger != nil {
			w.logger.Warn("PostgreSQL's primary belongs to another database cluster than before; "+
				"its timelines are not compared with the earlier cluster's",
				"system_identifier", system, "earlier_system_identifier", w.system, "timeline", tl, "server", addr)
		}
		w.system, w.highest, w.reported = system, tl, 0
		w.behind.Store(false)
		return
	}
	if tl >= w.highest {
		w.highest, w.reported = tl, 0
		w.behind.Store(false)
		return
	}
	w.behind.Store(true)
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
