package store

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"

	"github.com/queenmq/queen/internal/answerguard"
	"github.com/queenmq/queen/internal/pgtimeline"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/schema"
)

// Options configures the connection pool.
type Options struct {
	// ConnString is a libpq keyword/value DSN or a postgres:// URL.
	ConnString string
	// MaxConns caps the pool; connections are opened lazily.
	MaxConns int
	// StatementTimeout, LockTimeout and IdleInTxTimeout become the session settings
	// statement_timeout, lock_timeout and idle_in_transaction_session_timeout. 0 is none,
	// sent as 0 too, so that a default set on the role or database does not apply.
	StatementTimeout time.Duration
	LockTimeout      time.Duration
	IdleInTxTimeout  time.Duration
	// ConnectTimeout bounds each connection attempt (0 = the DSN's connect_timeout).
	ConnectTimeout time.Duration
	// KeepAlive configures TCP keepalives, always on, on every connection (zero fields =
	// the operating system's setting; Enable is ignored).
	KeepAlive net.KeepAliveConfig
	// TCPUserTimeout is TCP_USER_TIMEOUT: unacknowledged data fails the connection
	// after this long, so a dead database is noticed (0 = OS default).
	TCPUserTimeout time.Duration
	// TLSRootCAs, when set, are the CAs a server's certificate must chain to under
	// sslmode verify-ca and verify-full, in place of the system's (or sslrootcert's);
	// under require nothing is verified. TLSClientCert, when set, is presented to a
	// server that asks for a client certificate. Both reach every host of a list (tls.go).
	TLSRootCAs    *x509.CertPool
	TLSClientCert *tls.Certificate
	// AnswerDeadline is how long a statement may go unanswered before its connection is
	// closed (answerguard; 0: no limit). answerguard.Deadline(StatementTimeout) is the
	// usual value.
	AnswerDeadline time.Duration
	// CommitStall is how long a statement may be held for a synchronous standby before
	// the guard ends it (answerguard's WatchCommits; 0: never before AnswerDeadline).
	CommitStall time.Duration
	// Logger receives a warning for each connection closed because PostgreSQL left a
	// statement unanswered, and an error when a new connection finds the primary on an
	// earlier timeline than one before it (pgtimeline; nil: none).
	Logger *slog.Logger
	// PopAsyncCommit lets a pop that writes only leases and ready rows commit without
	// waiting for its WAL flush (synchronous_commit off for its transaction): a crash
	// of PostgreSQL, or a failover, can undo such a pop after it was answered, and its
	// messages are then delivered again. Pops that register a group or start a
	// subscription, autoAck pops, and everything else stay durable.
	PopAsyncCommit bool
}

// Store runs queen's SQL on a pgx pool.
type Store struct {
	pool *pgxpool.Pool
	// droppedAt is when dropConnections last reset the pool (Unix nanoseconds).
	droppedAt atomic.Int64
	// own holds the backend process ids of the pool's open connections, so the
	// wake-up listener can tell this replica's own NOTIFYs (already delivered
	// in-process) from other replicas'.
	own sync.Map // uint32 → struct{}
	// pushDirect and pushGeneral count MessageInsertBatch calls by the way they were
	// stored (push_direct.go).
	pushDirect, pushGeneral atomic.Uint64
	// ackDirect and ackGeneral count MessageAckBatch calls by path (ack_direct.go).
	ackDirect, ackGeneral atomic.Uint64
	// listenerPID is the backend process id of the wake-up listener's connection
	// while it listens (0 otherwise).
	listenerPID atomic.Uint32
	// cycles holds a token per claim open (locks.go): at most one fewer than the
	// pool's connections.
	cycles chan struct{}
	// guard closes connections whose statements PostgreSQL leaves unanswered (nil
	// when statement_timeout is off).
	guard *answerguard.Guard
	// popCommit is the pops' queen.pop_commit: "async" with Options.PopAsyncCommit,
	// else "".
	popCommit string
	// timeline is the primary's timeline as new connections find it.
	timeline *pgtimeline.Watch
}

// Open builds the pool without connecting; use Ping or ApplySchema to reach the server.
func Open(opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(opts.ConnString)
	if err != nil {
		return nil, fmt.Errorf("store: parse connection settings: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = int32(opts.MaxConns)
	}
	cfg.MinConns = 0
	// Memory per connection: pgx sizes two maps for 512 statements each up front
	// (27 KB apiece, ~95 KB a connection in all). queen runs about 100 distinct
	// statements, so 128 cached prepared statements hold all of them; the description
	// cache serves only QueryExecModeCacheDescribe, which queen never uses.
	cfg.ConnConfig.StatementCacheCapacity = 128
	cfg.ConnConfig.DescriptionCacheCapacity = 0
	if opts.ConnectTimeout > 0 {
		cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	}
	dialer := &net.Dialer{KeepAliveConfig: keepAlive(opts.KeepAlive), Control: tcpUserTimeoutControl(opts.TCPUserTimeout)}
	cfg.ConnConfig.DialFunc = dialer.DialContext
	applyTLS(&cfg.ConnConfig.Config, opts)
	params := cfg.ConnConfig.RuntimeParams
	setMillis := func(name string, d time.Duration) {
		params[name] = strconv.FormatInt(max(d, 0).Milliseconds(), 10)
	}
	setMillis("statement_timeout", opts.StatementTimeout)
	setMillis("lock_timeout", opts.LockTimeout)
	setMillis("idle_in_transaction_session_timeout", opts.IdleInTxTimeout)
	if _, ok := params["application_name"]; !ok {
		params["application_name"] = "queen"
	}
	params["timezone"] = "UTC"
	// Every statement is written for READ COMMITTED: a push reads its partitions' heads
	// with a snapshot taken after their locks, which a database-wide REPEATABLE READ
	// default would take before them (messages stamped out of commit order).
	params["default_transaction_isolation"] = "read committed"
	s := &Store{cycles: make(chan struct{}, max(1, cfg.MaxConns-1))}
	if opts.PopAsyncCommit {
		s.popCommit = "async"
	}
	// A statement refused because the server cannot take writes (a standby, or a
	// primary being demoted) means that every connection to that server is useless:
	// close this one at once and drop the others, so the next ones are made to the
	// server that is writable now.
	keepOnError := cfg.ConnConfig.OnPgError
	cfg.ConnConfig.OnPgError = func(c *pgconn.PgConn, pgErr *pgconn.PgError) bool {
		if serverAwaySQLState(pgErr.Code) {
			s.dropConnections()
			return false
		}
		return keepOnError == nil || keepOnError(c, pgErr)
	}
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		s.own.Store(c.PgConn().PID(), struct{}{})
		return nil
	}
	cfg.BeforeClose = func(c *pgx.Conn) { s.own.Delete(c.PgConn().PID()) }
	s.timeline = pgtimeline.Install(cfg, opts.Logger)
	// A statement left unanswered for AnswerDeadline has its connection closed:
	// it fails as on a lost connection (queue.ErrUnavailable, queue.ErrOutcomeUnknown),
	// and a push falls back to the spool, whose replay deduplicates on the transaction id.
	// Installed last: it chains the pool hooks set above.
	s.guard = answerguard.Install(cfg, opts.AnswerDeadline, opts.Logger)
	s.guard.WatchCommits(opts.CommitStall)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("store: create pool: %w", err)
	}
	s.pool = pool
	return s, nil
}

// Close closes every connection of the pool.
func (s *Store) Close() {
	s.pool.Close()
	s.guard.Close()
}

// CommitsStalled reports whether PostgreSQL holds commits for a synchronous standby
// that does not confirm them (Options.CommitStall): since a statement was ended for
// it, until a commit is confirmed again.
func (s *Store) CommitsStalled() bool { return s.guard.Stalled() }

// Ping checks that PostgreSQL answers.
func (s *Store) Ping(ctx context.Context) error {
	return interpretError(s.pool.Ping(ctx))
}

// ApplySchema applies the embedded DDL on one pooled connection (see schema.Apply).
func (s *Store) ApplySchema(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return interpretError(err)
	}
	defer conn.Release()
	return interpretError(schema.Apply(ctx, conn.Conn()))
}

// PoolStats reports the pool's size and use.
type PoolStats struct {
	MaxConns      int
	TotalConns    int
	IdleConns     int
	AcquiredConns int
	// Unanswered counts the connections closed because PostgreSQL had not answered a
	// statement within Options.AnswerDeadline.
	Unanswered uint64
	// CommitsStalled is Store.CommitsStalled, and StalledStatements counts the
	// statements ended because their commit was held for a synchronous standby.
	CommitsStalled    bool
	StalledStatements uint64
	// Timeline is the primary's timeline as the newest connection to it found it (0:
	// not known), TimelineBehind whether that is earlier than one a connection to the
	// same cluster found before, and TimelineRegressions how many times a new connection
	// found such an earlier one, once per timeline (pgtimeline).
	Timeline            int64
	TimelineBehind      bool
	TimelineRegressions uint64
}

// Stats returns the current pool statistics.
func (s *Store) Stats() PoolStats {
	st := s.pool.Stat()
	ps := PoolStats{
		MaxConns:      int(st.MaxConns()),
		TotalConns:    int(st.TotalConns()),
		IdleConns:     int(st.IdleConns()),
		AcquiredConns: int(st.AcquiredConns()),
	}
	ps.Unanswered = s.guard.Closed()
	ps.CommitsStalled, ps.StalledStatements = s.guard.Stalled(), s.guard.StalledStatements()
	ps.Timeline, ps.TimelineBehind, ps.TimelineRegressions = s.timeline.Current(), s.timeline.Behind(), s.timeline.Regressions()
	return ps
}

// interpretError translates pgx and network errors into queue sentinels, in this
// order (the first match wins):
//
//	pgx.ErrNoRows                                        queue.ErrNotFound
//	connection-level failure (isUnavailable)             queue.ErrUnavailable (and
//	                                                     queue.ErrOutcomeUnknown when
//	                                                     the statement was sent)
//	context.DeadlineExceeded, statement_timeout (57014), queue.ErrTimeout
//	lock_timeout (55P03)
//	context.Canceled                                     kept (errors.Is(err, context.Canceled))
//	unique violation (23505)                             queue.ErrConflict
//	anything else                                        unchanged (an internal error)
//
// Only ErrUnavailable lets a push fall back to the spool, so isUnavailable is strict:
// pgx reports a deadline as a net.Error timeout and an already expired context as
// SafeToRetry, and neither means the database is down. A failed connection attempt
// (*pgconn.ConnectError) is an outage even when the pool's connect timeout ended it.
// The database's own text stays in the chain for the log; clients never see it (the
// HTTP layer answers fixed messages for these classes).
func interpretError(err error) error {
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: %w", queue.ErrNotFound, err)
	case isUnavailable(err):
		if sentUnanswered(err) {
			return fmt.Errorf("%w: %w: %w", queue.ErrUnavailable, queue.ErrOutcomeUnknown, err)
		}
		return fmt.Errorf("%w: %w", queue.ErrUnavailable, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %w", queue.ErrTimeout, err)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("database call canceled: %w", err)
	case errors.As(err, &pgErr):
		switch pgErr.Code {
		case "57014", "55P03": // query_canceled (statement_timeout), lock_not_available (lock_timeout)
			return fmt.Errorf("%w: %w", queue.ErrTimeout, err)
		case "23505": // unique_violation
			return fmt.Errorf("%w: %w", queue.ErrConflict, err)
		}
	}
	return err
}

// isUnavailable reports a connection-level failure: the database could not be
// reached, or the connection died under the statement. It is false for deadlines
// and cancellations, which are ruled out before the EOF, SafeToRetry and net.Error
// tests because pgx wraps them in errors that pass those (a net.Error whose Timeout
// is true, a SafeToRetry "context already done").
func isUnavailable(err error) bool {
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true // no connection: nothing was sent
	}
	if errors.Is(err, puddle.ErrClosedPool) {
		return true // the store is closed (shutdown)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return unavailableSQLState(pgErr.Code)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	// The server went away mid-conversation (crash, immediate shutdown): pgconn
	// returns the raw read error. Whatever was sent may or may not have committed;
	// callers that fall back (the push spool) rely on idempotent replay.
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	// Nothing reached the server, e.g. the connection was already closed
	// (pgconn.ErrConnClosed).
	if pgconn.SafeToRetry(err) {
		return true
	}
	// What is left of net.Error is a socket failure (reset, broken pipe,
	// TCP_USER_TIMEOUT): deadlines were excluded above.
	var netErr net.Error
	return errors.As(err, &netErr)
}

// sentUnanswered reports, of an error isUnavailable accepted, whether the statement
// may have reached the server before the connection broke: anything but a failed
// connection attempt, a closed pool or an answer from the server. pgx's SafeToRetry
// cannot tell: a connection that broke while the statement ran is reported as
// "conn closed", which it calls safe to retry.
func sentUnanswered(err error) bool {
	var (
		connectErr *pgconn.ConnectError
		pgErr      *pgconn.PgError
	)
	return !errors.As(err, &connectErr) && !errors.As(err, &pgErr) && !errors.Is(err, puddle.ErrClosedPool)
}

// unavailableSQLState reports the SQLSTATEs of a server that is going away, refusing
// connections or unable to take writes: those of serverAwaySQLState,
// too_many_connections, and class 08 (connection exception) except 08P01
// (protocol_violation, a client bug that retrying cannot fix).
func unavailableSQLState(code string) bool {
	switch {
	case serverAwaySQLState(code), code == "53300":
		return true
	case code == "08P01":
		return false
	}
	return strings.HasPrefix(code, "08")
}

// serverAwaySQLState reports the SQLSTATEs that say the server a connection reaches is
// no writable primary any more, whatever the statement: read_only_sql_transaction
// (25006: a standby in recovery, or a primary being demoted; queen never runs a
// writing statement in a read-only transaction of its own), admin_shutdown,
// crash_shutdown and cannot_connect_now (57P01-57P03: shutting down, restarting,
// starting up or in recovery). During a failover these are the database being away,
// never a fault of the request.
func serverAwaySQLState(code string) bool {
	switch code {
	case "25006", "57P01", "57P02", "57P03":
		return true
	}
	return false
}

// dropConnectionsEvery bounds how often dropConnections resets the pool: every
// connection to a server that went away reports it, but one reset drops them all.
const dropConnectionsEvery = time.Second

// dropConnections closes the pool's idle connections now and its busy ones when they
// are released, so that new connections are made, to whichever host is writable
// (target_session_attrs). At most once per dropConnectionsEvery.
func (s *Store) dropConnections() {
	now := time.Now().UnixNano()
	last := s.droppedAt.Load()
	if now-last < int64(dropConnectionsEvery) || !s.droppedAt.CompareAndSwap(last, now) || s.pool == nil {
		return
	}
	s.pool.Reset()
}

// keepAlive is c with keepalives on and each zero field left to the operating system
// (for package net a zero field is Go's own default, 15 s or 9 probes, and a negative one
// the system's).
func keepAlive(c net.KeepAliveConfig) net.KeepAliveConfig {
	c.Enable = true
	for _, f := range []*time.Duration{&c.Idle, &c.Interval} {
		if *f == 0 {
			*f = -1
		}
	}
	if c.Count == 0 {
		c.Count = -1
	}
	return c
}
