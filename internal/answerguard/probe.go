package answerguard

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// prober runs short statements on a connection of the guard's own, to look at the
// server from outside the statements being timed: whether it answers at all (a
// batch's later deadlines, guard.go), whether a backend waits for a synchronous
// standby (commits.go).
type prober struct {
	cfg    *pgx.ConnConfig // the pool's, with the guard and the caller's hooks left out
	stop   context.Context // ends with the guard
	cancel context.CancelFunc

	mu   sync.Mutex // serialises the probes on conn
	conn *pgx.Conn  // nil until the first probe, and after a failed one
	// lastAnswer is when answers last looked and what it found: several batches
	// past their first deadline at once share one look (mu).
	lastAnswer   time.Time
	lastAnswered bool
}

func newProber(cfg *pgx.ConnConfig) *prober {
	probe := cfg.Copy()
	probe.Tracer, probe.OnPgError, probe.OnNotice, probe.OnNotification = nil, nil, nil, nil
	ctx, cancel := context.WithCancel(context.Background())
	return &prober{cfg: probe, stop: ctx, cancel: cancel}
}

// query runs f on the probe connection, made if need be, within probeTimeout. A
// failure drops the connection.
func (p *prober) query(f func(context.Context, *pgx.Conn) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx, cancel := context.WithTimeout(p.stop, probeTimeout)
	defer cancel()
	if p.conn == nil {
		conn, err := pgx.ConnectConfig(ctx, p.cfg)
		if err != nil {
			return err
		}
		p.conn = conn
	}
	if err := f(ctx, p.conn); err != nil {
		closeCtx, cancelClose := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
		defer cancelClose()
		_ = p.conn.Close(closeCtx)
		p.conn = nil
		return err
	}
	return nil
}

// answers reports whether the server answers a statement within probeTimeout; a look
// less than probeTimeout old is reused.
func (p *prober) answers() bool {
	p.mu.Lock()
	if !p.lastAnswer.IsZero() && time.Since(p.lastAnswer) < probeTimeout {
		defer p.mu.Unlock()
		return p.lastAnswered
	}
	p.mu.Unlock()
	ok := p.query(func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "SELECT 1")
		return err
	}) == nil
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastAnswer, p.lastAnswered = time.Now(), ok
	return ok
}

// close ends the probes and closes the connection.
func (p *prober) close() {
	p.cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		defer cancel()
		_ = p.conn.Close(ctx)
		p.conn = nil
	}
}
