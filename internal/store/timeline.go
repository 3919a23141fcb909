package store

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// The primary's timeline. PostgreSQL starts a new timeline each time a standby is
// promoted, so on one database the timeline of the primary only grows. A new
// connection that finds the primary on an earlier timeline than one this broker
// reached before has reached a former primary that leads again (a split brain: a
// failover manager that let a resumed primary take the lead back): what was committed
// on the later timeline, acknowledged pushes and acks among it, is not on it. The
// broker cannot undo that; it counts it, logs it once per timeline, and goes on (see
// docs/high-availability.md).

// sqlTimeline reads the timeline of the primary from the name of its current WAL
// file (its first 8 hexadecimal digits), which needs no privilege; 0 on a standby.
const sqlTimeline = `SELECT CASE WHEN pg_is_in_recovery() THEN 0
    ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer END`

// timelineWatch remembers the timelines new connections found.
type timelineWatch struct {
	logger *slog.Logger // nil: no log

	mu       sync.Mutex
	highest  int64 // the latest timeline a connection found
	reported int64 // the earlier timeline last logged, so each is logged once

	current     atomic.Int64  // the timeline of the newest connection to a primary
	regressions atomic.Uint64 // connections that found an earlier timeline than highest, once per timeline
}

// observe reads the timeline on a new connection and notes it. A failure to read it
// (a server without WAL functions, a connection that broke) is not the connection's:
// it is left out.
func (w *timelineWatch) observe(ctx context.Context, c *pgx.Conn) {
	var tl int64
	if err := c.QueryRow(ctx, sqlTimeline).Scan(&tl); err != nil || tl <= 0 {
		return
	}
	w.note(tl, c.PgConn().Conn().RemoteAddr().String())
}

// note records that a connection to addr found the primary on timeline tl.
func (w *timelineWatch) note(tl int64, addr string) {
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
		w.logger.Error("PostgreSQL's primary is on an earlier timeline than this broker reached before: "+
			"a former primary takes writes again, and what was committed on the later timeline is not on it",
			"timeline", tl, "latest_seen", w.highest, "server", addr)
	}
}
