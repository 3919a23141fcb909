// Package answerguard closes the PostgreSQL connections whose statements go unanswered.
//
// A server that runs enforces statement_timeout itself and answers with an error. One
// that is alive but silent (stopped with SIGSTOP, a paused virtual machine, a commit
// waiting for a synchronous standby that is gone) never answers, and TCP keepalives
// and TCP_USER_TIMEOUT never fire while its host acknowledges packets: a request would
// wait until the server resumes. A Guard, installed on a pgx pool, closes the socket of
// a statement left unanswered for its deadline (by default statement_timeout plus
// [Grace]: a server that runs answers first). The statement then fails as on a
// connection lost under it (a net.Error, its outcome unknown), and the pool discards
// the connection.
//
// The pool's check of a connection idle for more than a second (a ping) is bounded
// too: a ping unanswered within the ping timeout marks the server silent for one
// deadline, during which the idle connections handed out are dropped without a ping
// of their own, so a request does not wait a ping timeout for each idle connection.
//
// A guard told to watch commits ([Guard.WatchCommits]) also ends, well before the
// deadline, a statement whose commit PostgreSQL holds for a synchronous standby that
// does not confirm it, and reports the stall until a commit is confirmed again
// (commits.go).
package answerguard

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Grace is how long past statement_timeout a statement may go unanswered by default
// (see Deadline), and at most how long the pool's ping of an idle connection may.
const Grace = 5 * time.Second

// Deadline is the default deadline for a pool whose statements are limited to
// statementTimeout: statementTimeout + Grace, or 0 (none) when there is no limit.
func Deadline(statementTimeout time.Duration) time.Duration {
	if statementTimeout <= 0 {
		return 0
	}
	return statementTimeout + Grace
}

// Guard is a pgx tracer timing every statement of the pool it is installed on. A batch
// of n statements may take n deadlines on a server that runs (PostgreSQL sends a
// pipeline's results only at its end, and statement_timeout bounds each statement),
// but past its first deadline it goes on only while the server answers a statement
// of the guard's own connection: a silent server ends it after one deadline and a
// probe. Closing the socket is safe while pgx reads or writes it.
type Guard struct {
	deadline time.Duration
	logger   *slog.Logger // nil: no warning
	closed   atomic.Uint64
	// pingTimeout bounds the pool's ping of a connection idle for more than pingIdle.
	pingTimeout, pingIdle time.Duration
	// silentUntil (Unix nanoseconds) is the end of the window that followed the last
	// unanswered ping: idle connections are dropped without a ping until then.
	silentUntil atomic.Int64
	// probe looks at the server from a connection of the guard's own (probe.go).
	probe *prober
	// commits, when set, ends statements held for a synchronous standby (commits.go).
	commits *commitWatch
}

// customKey keys a connection's fired flag (an *atomic.Bool) in its CustomData.
const customKey = "answerguard.fired"

// Install puts a Guard on cfg that closes the connection of a statement unanswered
// after deadline, warning on logger (nil: silently) for each. It chains cfg's
// AfterConnect and replaces its ShouldPing, so it goes after the caller's own hooks.
// With no deadline it installs nothing and returns nil.
func Install(cfg *pgxpool.Config, deadline time.Duration, logger *slog.Logger) *Guard {
	if deadline <= 0 {
		return nil
	}
	g := &Guard{deadline: deadline, logger: logger, pingTimeout: min(deadline, Grace), pingIdle: time.Second,
		probe: newProber(cfg.ConnConfig)}
	cfg.ConnConfig.Tracer = g
	// The pool checks a connection idle for more than a second before handing it out,
	// with a ping no tracer sees: the guard pings instead (shouldPing), and the pool's
	// own ping, which follows only a failed one, is bounded too. shouldPing also makes
	// the pool drop a connection whose socket the guard closed, which may look healthy
	// to pgx (a query's rows were all read before the guard fired). (Not AfterRelease:
	// with it, pgxpool releases every connection from a goroutine of its own.)
	cfg.PingTimeout = g.pingTimeout
	cfg.ShouldPing = g.shouldPing
	// A new connection is an answer: the server is not silent (any more).
	afterConnect := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		g.answered()
		if afterConnect == nil {
			return nil
		}
		return afterConnect(ctx, conn)
	}
	return g
}

// answered ends the window of an unanswered ping early.
func (g *Guard) answered() {
	if g.silentUntil.Load() != 0 {
		g.silentUntil.Store(0)
	}
}

// shouldPing replaces pgxpool's check of a connection idle for more than pingIdle
// before it is handed out: it pings the connection itself, within pingTimeout, and
// answers false when the ping was answered (no second ping) and true when not, so
// that the pool's ping fails at once on the closed connection and the pool drops it
// and tries the next. After an unanswered ping the server is taken as silent for a
// deadline, or until a statement succeeds or a new connection is made: the idle
// connections handed out meanwhile are closed without a ping. A connection whose
// socket the guard closed is answered true at once, however briefly idle.
func (g *Guard) shouldPing(ctx context.Context, p pgxpool.ShouldPingParams) bool {
	// The flag was written by the connection's last owner; the pool's hand-off
	// orders that before this read.
	if fired, ok := p.Conn.PgConn().CustomData()[customKey].(*atomic.Bool); ok && fired.Load() {
		return true
	}
	if p.IdleDuration <= g.pingIdle {
		return false
	}
	if time.Now().UnixNano() < g.silentUntil.Load() {
		_ = p.Conn.PgConn().Conn().Close()
		return true
	}
	pingCtx, cancel := context.WithTimeout(ctx, g.pingTimeout)
	defer cancel()
	err := p.Conn.Ping(pingCtx)
	if err == nil {
		return false
	}
	if errors.Is(pingCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		g.silentUntil.Store(time.Now().Add(g.deadline).UnixNano())
		if g.logger != nil {
			g.logger.Warn("PostgreSQL left a ping unanswered; idle connections are dropped without one for a while",
				"waited", g.pingTimeout.String(), "for", g.deadline.String(), "backend_pid", p.Conn.PgConn().PID())
		}
	}
	// pgx closed the connection when the ping failed or timed out; close it anyway.
	_ = p.Conn.PgConn().Conn().Close()
	return true
}

// Closed counts the connections closed for want of an answer (0 for a nil Guard).
func (g *Guard) Closed() uint64 {
	if g == nil {
		return 0
	}
	return g.closed.Load()
}

// key keys the statement's watch in the context pgx hands back to the tracer.
type key struct{}

// unguardedKey marks a context whose statements the guard leaves alone.
type unguardedKey struct{}

// Unguarded returns ctx for statements the guard must not time: work whose length
// the deadline cannot bound, such as a schema file, many statements sent as one
// (statement_timeout still bounds each of them on a server that runs).
func Unguarded(ctx context.Context) context.Context {
	return context.WithValue(ctx, unguardedKey{}, true)
}

// watch is one statement's (or batch's) clock.
type watch struct {
	mu    sync.Mutex // guards timer, which end stops and a look at the backend re-arms
	timer *time.Timer
	// state is 0 while the statement runs, 1 once it ended, 2 once the guard fired.
	state atomic.Int32
}

func (g *Guard) start(ctx context.Context, conn *pgx.Conn, statements int) context.Context {
	if ctx.Value(unguardedKey{}) != nil {
		return ctx
	}
	w := &watch{}
	// CustomData is the connection owner's: written here, read by shouldPing when the
	// pool next hands the connection out; the timer only flips the flag.
	data := conn.PgConn().CustomData()
	fired, ok := data[customKey].(*atomic.Bool)
	if !ok {
		fired = new(atomic.Bool)
		data[customKey] = fired
	}
	statements = max(statements, 1)
	limit := time.Duration(statements) * g.deadline
	// step spaces the looks at a statement still running: every commit-stall delay
	// when commits are watched, else every deadline.
	step := g.deadline
	if g.commits != nil {
		step = g.commits.after
	}
	begin := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = time.AfterFunc(min(step, limit), func() {
		if w.state.Load() != 0 {
			return
		}
		elapsed := time.Since(begin)
		if elapsed < limit {
			pid := conn.PgConn().PID()
			if g.commits != nil && g.commits.held(pid) {
				// Counted (and the stall reported) before the socket closes, so that
				// the statement's caller sees them when it fails.
				g.fire(w, fired, conn, func() { g.commits.endedOne(pid) })
				return
			}
			// Past one deadline a batch goes on only while the server answers others.
			if elapsed >= g.deadline && !g.probe.answers() {
				g.fire(w, fired, conn, func() { g.warnUnanswered(elapsed, statements, pid, "; the server answers no other") })
				return
			}
			// Looked at again after the same delay: a backend caught between two
			// waits, or behind one that is not held yet, may be held by then.
			w.mu.Lock()
			defer w.mu.Unlock()
			w.timer.Reset(min(step, limit-time.Since(begin)))
			return
		}
		g.fire(w, fired, conn, func() { g.warnUnanswered(limit, statements, conn.PgConn().PID(), "") })
	})
	return context.WithValue(ctx, key{}, w)
}

// warnUnanswered counts a statement (or batch) the guard ended and warns of it.
func (g *Guard) warnUnanswered(waited time.Duration, statements int, pid uint32, why string) {
	g.closed.Add(1)
	if g.logger != nil {
		g.logger.Warn("PostgreSQL left a statement unanswered"+why+"; its connection is closed, and the request "+
			"answered as on a lost connection", "waited", waited.Round(time.Millisecond).String(), "statements", statements,
			"backend_pid", pid)
	}
}

// fire ends a running statement: it runs before (the counting and the warning), then
// closes the connection's socket, so that the statement fails as on a lost connection
// and the pool drops the connection. It does nothing when the statement had ended
// meanwhile.
func (g *Guard) fire(w *watch, fired *atomic.Bool, conn *pgx.Conn, before func()) {
	if !w.state.CompareAndSwap(0, 2) {
		return
	}
	fired.Store(true)
	before()
	_ = conn.PgConn().Conn().Close()
}

func (g *Guard) end(ctx context.Context, err error) {
	if w, ok := ctx.Value(key{}).(*watch); ok && w.state.CompareAndSwap(0, 1) {
		w.mu.Lock()
		w.timer.Stop()
		w.mu.Unlock()
		if err == nil {
			g.answered()
		}
	}
}

// TraceQueryStart starts the clock of a statement.
func (g *Guard) TraceQueryStart(ctx context.Context, conn *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return g.start(ctx, conn, 1)
}

// TraceQueryEnd stops it.
func (g *Guard) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	g.end(ctx, data.Err)
}

// TraceBatchStart starts the clock of a batch.
func (g *Guard) TraceBatchStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	return g.start(ctx, conn, data.Batch.Len())
}

// TraceBatchQuery does nothing: the batch's clock runs until its end.
func (g *Guard) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd stops it.
func (g *Guard) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	g.end(ctx, data.Err)
}
