package store

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// answerGrace is how long past statement_timeout a statement may go unanswered before
// its connection is closed (see answerGuard).
const answerGrace = 5 * time.Second

// answerGuard closes the connection of a statement PostgreSQL has not answered within
// statement_timeout plus answerGrace. A server that runs enforces statement_timeout
// itself and answers with an error first; one that is alive but silent (stopped with
// SIGSTOP, a paused virtual machine, a commit waiting for a synchronous standby that
// is gone) never does, and TCP keepalives and TCP_USER_TIMEOUT never fire while its
// host acknowledges packets. Without the guard the request would wait until the
// server resumes; with it the statement fails as on a connection lost under it
// (queue.ErrUnavailable with queue.ErrOutcomeUnknown): a push falls back to the spool,
// whose replay deduplicates on the transaction id.
//
// It is the pool's pgx tracer. A batch of n statements gets n statement_timeouts plus
// the grace: PostgreSQL sends a pipeline's results only at its end. Closing the socket
// is safe while pgx reads or writes it, and pgx then closes the connection, which the
// pool discards.
type answerGuard struct {
	timeout time.Duration // statement_timeout
	logger  *slog.Logger  // nil: no warning
	// closed counts the connections closed for want of an answer.
	closed atomic.Uint64
}

// guardKey keys the statement's watch in the context pgx hands back to the tracer.
type guardKey struct{}

// watch is one statement's (or batch's) clock.
type watch struct {
	timer *time.Timer
	// state is 0 while the statement runs, 1 once it ended, 2 once the guard fired.
	state atomic.Int32
}

func (g *answerGuard) start(ctx context.Context, conn *pgx.Conn, statements int) context.Context {
	w := &watch{}
	limit := time.Duration(max(statements, 1))*g.timeout + answerGrace
	w.timer = time.AfterFunc(limit, func() {
		if !w.state.CompareAndSwap(0, 2) {
			return
		}
		g.closed.Add(1)
		if g.logger != nil {
			g.logger.Warn("PostgreSQL left a statement unanswered; its connection is closed, and the request "+
				"answered as on a lost connection (a push goes to the spool)", "waited", limit.String(),
				"statements", max(statements, 1), "backend_pid", conn.PgConn().PID())
		}
		_ = conn.PgConn().Conn().Close()
	})
	return context.WithValue(ctx, guardKey{}, w)
}

func (g *answerGuard) end(ctx context.Context) {
	if w, ok := ctx.Value(guardKey{}).(*watch); ok && w.state.CompareAndSwap(0, 1) {
		w.timer.Stop()
	}
}

// TraceQueryStart starts the clock of a statement.
func (g *answerGuard) TraceQueryStart(ctx context.Context, conn *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return g.start(ctx, conn, 1)
}

// TraceQueryEnd stops it.
func (g *answerGuard) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	g.end(ctx)
}

// TraceBatchStart starts the clock of a batch.
func (g *answerGuard) TraceBatchStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	return g.start(ctx, conn, data.Batch.Len())
}

// TraceBatchQuery does nothing: the batch's clock runs until its end.
func (g *answerGuard) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd stops it.
func (g *answerGuard) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	g.end(ctx)
}
