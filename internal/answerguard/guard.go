// Package answerguard closes the PostgreSQL connections whose statements go unanswered.
//
// A server that runs enforces statement_timeout itself and answers with an error. One
// that is alive but silent (stopped with SIGSTOP, a paused virtual machine, a commit
// waiting for a synchronous standby that is gone) never answers, and TCP keepalives
// and TCP_USER_TIMEOUT never fire while its host acknowledges packets: a request would
// wait until the server resumes. A Guard, installed on a pgx pool, closes the socket of
// a statement left unanswered for its deadline (by default statement_timeout plus
// [Grace]: a server that runs answers first). The statement then fails as on a
// connection lost under it (a net.Error, its outcome unknown), and pgx closes the
// connection, which the pool discards.
package answerguard

import (
	"context"
	"log/slog"
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
// of n statements gets n deadlines: PostgreSQL sends a pipeline's results only at its
// end. Closing the socket is safe while pgx reads or writes it.
type Guard struct {
	deadline time.Duration
	logger   *slog.Logger // nil: no warning
	closed   atomic.Uint64
}

// Install puts a Guard on cfg that closes the connection of a statement unanswered
// after deadline, warning on logger (nil: silently) for each. With no deadline it
// installs nothing and returns nil.
func Install(cfg *pgxpool.Config, deadline time.Duration, logger *slog.Logger) *Guard {
	if deadline <= 0 {
		return nil
	}
	g := &Guard{deadline: deadline, logger: logger}
	cfg.ConnConfig.Tracer = g
	// The pool checks a connection idle for more than a second before handing it out,
	// with a ping no tracer sees: bound it too.
	cfg.PingTimeout = min(deadline, Grace)
	return g
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

// watch is one statement's (or batch's) clock.
type watch struct {
	timer *time.Timer
	// state is 0 while the statement runs, 1 once it ended, 2 once the guard fired.
	state atomic.Int32
}

func (g *Guard) start(ctx context.Context, conn *pgx.Conn, statements int) context.Context {
	w := &watch{}
	statements = max(statements, 1)
	limit := time.Duration(statements) * g.deadline
	w.timer = time.AfterFunc(limit, func() {
		if !w.state.CompareAndSwap(0, 2) {
			return
		}
		g.closed.Add(1)
		if g.logger != nil {
			g.logger.Warn("PostgreSQL left a statement unanswered; its connection is closed, and the request "+
				"answered as on a lost connection", "waited", limit.String(), "statements", statements,
				"backend_pid", conn.PgConn().PID())
		}
		_ = conn.PgConn().Conn().Close()
	})
	return context.WithValue(ctx, key{}, w)
}

func (g *Guard) end(ctx context.Context) {
	if w, ok := ctx.Value(key{}).(*watch); ok && w.state.CompareAndSwap(0, 1) {
		w.timer.Stop()
	}
}

// TraceQueryStart starts the clock of a statement.
func (g *Guard) TraceQueryStart(ctx context.Context, conn *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return g.start(ctx, conn, 1)
}

// TraceQueryEnd stops it.
func (g *Guard) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	g.end(ctx)
}

// TraceBatchStart starts the clock of a batch.
func (g *Guard) TraceBatchStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	return g.start(ctx, conn, data.Batch.Len())
}

// TraceBatchQuery does nothing: the batch's clock runs until its end.
func (g *Guard) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd stops it.
func (g *Guard) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	g.end(ctx)
}
