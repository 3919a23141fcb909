package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"

	"github.com/queenmq/queen/internal/answerguard"
	"github.com/queenmq/queen/internal/pgtimeline"
	"github.com/queenmq/queen/internal/proxy/schema"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// Store runs the proxy's queries on one pool.
type Store struct {
	pool     *pgxpool.Pool
	guard    *answerguard.Guard
	timeline *pgtimeline.Watch
	// defaultCellOwned refuses the admin changes of the default cell's upstreams
	// and its delete: the configuration owns them.
	defaultCellOwned atomic.Bool
}

// Options say how to reach the proxy's database.
type Options struct {
	ConnString       string
	MaxConns         int
	StatementTimeout time.Duration
	// DefaultCellOwned says that the configuration owns the default cell's
	// upstreams: CellUpdate refuses to change them and CellDelete to delete it
	// (CellEnsureDefault with upstreams sets it too).
	DefaultCellOwned bool
	// Logger receives a warning for each connection closed because PostgreSQL left a
	// statement unanswered, and an error when a new connection finds the primary on an
	// earlier timeline than one before it (pgtimeline; nil: none).
	Logger *slog.Logger
}

// Open creates the pool. It does not connect: Ready and ApplySchema do.
func Open(o Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(o.ConnString)
	if err != nil {
		return nil, fmt.Errorf("parse the proxy database settings: %w", err)
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = int32(o.MaxConns)
	}
	if o.StatementTimeout > 0 {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = fmt.Sprint(o.StatementTimeout.Milliseconds())
	}
	timeline := pgtimeline.Install(cfg, o.Logger)
	// A statement left unanswered past the timeout + 5 s (a frozen server) has its
	// connection closed and fails as unavailable.
	guard := answerguard.Install(cfg, answerguard.Deadline(o.StatementTimeout), o.Logger)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("open the proxy database pool: %w", err)
	}
	st := &Store{pool: pool, guard: guard, timeline: timeline}
	st.defaultCellOwned.Store(o.DefaultCellOwned)
	return st, nil
}

// Close closes the pool and the guard's own connection.
func (s *Store) Close() {
	s.pool.Close()
	s.guard.Close()
}

// PoolStats is the pool's state at one moment.
type PoolStats struct {
	MaxConns, IdleConns, AcquiredConns int
	// AcquireWaits counts the acquisitions that found no idle connection, and
	// AcquireWait is the time they waited.
	AcquireWaits int64
	AcquireWait  time.Duration
	// Unanswered counts the connections closed because PostgreSQL left a
	// statement unanswered past the deadline.
	Unanswered uint64
	// Timeline is the primary's timeline as the newest connection to it found it (0:
	// not known), TimelineBehind whether that is earlier than one a connection to the
	// same cluster found before, and TimelineRegressions how many times a new connection
	// found such an earlier one, once per timeline (pgtimeline).
	Timeline            int64
	TimelineBehind      bool
	TimelineRegressions uint64
}

// PoolStats reads the pool's statistics.
func (s *Store) PoolStats() PoolStats {
	st := s.pool.Stat()
	return PoolStats{MaxConns: int(st.MaxConns()), IdleConns: int(st.IdleConns()), AcquiredConns: int(st.AcquiredConns()),
		AcquireWaits: st.EmptyAcquireCount(), AcquireWait: st.EmptyAcquireWaitTime(), Unanswered: s.guard.Closed(),
		Timeline: s.timeline.Current(), TimelineBehind: s.timeline.Behind(), TimelineRegressions: s.timeline.Regressions()}
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return interpretError(s.pool.Ping(ctx)) }

// ApplySchema brings the database to the embedded schema on one connection of its own.
func (s *Store) ApplySchema(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return interpretError(err)
	}
	defer conn.Release()
	return interpretError(schema.Apply(ctx, conn.Conn()))
}

// interpretError is the only reader of pgx errors: it turns them into the tenant
// package's sentinels.
func interpretError(err error) error {
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pgx.ErrNoRows):
		return tenant.ErrNotFound
	case errors.As(err, &pgErr) && pgErr.Code == "23505":
		return fmt.Errorf("%w: %s", tenant.ErrAlreadyExists, pgErr.ConstraintName)
	case errors.As(err, &pgErr) && pgErr.Code == "57P01": // admin_shutdown (terminated)
		return fmt.Errorf("%w: %w", tenant.ErrUnavailable, err)
	case isUnavailable(err):
		return fmt.Errorf("%w: %w", tenant.ErrUnavailable, err)
	}
	return err
}

func isUnavailable(err error) bool {
	var connErr *pgconn.ConnectError
	var netErr net.Error
	var pgErr *pgconn.PgError
	if errors.As(err, &connErr) {
		return true
	}
	if errors.As(err, &pgErr) {
		return pgErr.Code == "57P03" || pgErr.Code == "53300" || strings.HasPrefix(pgErr.Code, "08")
	}
	return errors.As(err, &connErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, puddle.ErrClosedPool) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || pgconn.Timeout(err)
}

// inTx runs fn in one transaction, committed when fn returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return interpretError(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(tx); err != nil {
		return interpretError(err)
	}
	return interpretError(tx.Commit(ctx))
}

// audit records a change in the audit log, in the change's transaction.
func audit(ctx context.Context, tx pgx.Tx, actor, action, target string, detail any) error {
	if detail == nil {
		detail = map[string]any{}
	}
	_, err := tx.Exec(ctx, `INSERT INTO queen_proxy.audit_log (actor, action, target, detail) VALUES ($1, $2, $3, $4)`,
		actor, action, target, detail)
	return err
}
