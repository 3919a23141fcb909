package store

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
)

// errorClass is what interpretError made of an error; classInternal is none of the
// sentinels (answered 500).
type errorClass string

const (
	classNotFound    errorClass = "not_found"
	classUnavailable errorClass = "unavailable"
	classTimeout     errorClass = "timeout"
	classCanceled    errorClass = "canceled"
	classConflict    errorClass = "conflict"
	classInternal    errorClass = "internal"
)

// classesOf lists every class err matches; a translated error must match exactly one.
func classesOf(err error) []errorClass {
	var out []errorClass
	for _, c := range []struct {
		class  errorClass
		target error
	}{
		{classNotFound, queue.ErrNotFound}, {classUnavailable, queue.ErrUnavailable},
		{classTimeout, queue.ErrTimeout}, {classCanceled, context.Canceled}, {classConflict, queue.ErrConflict},
	} {
		if errors.Is(err, c.target) {
			out = append(out, c.class)
		}
	}
	if len(out) == 0 {
		out = append(out, classInternal)
	}
	return out
}

// TestInterpretError feeds interpretError the errors pgx really returns for each
// failure, produced against the test PostgreSQL, and checks the class of each.
func TestInterpretError(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDBURL(t)
	pool, err := pgxpool.New(t.Context(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = pool.Exec(t.Context(), `CREATE TABLE locked (x int); CREATE TABLE uniq (x int PRIMARY KEY)`)
	require.NoError(t, err)

	// conn acquires a connection of its own, closed at the end of the subtest, for
	// failures that break or reconfigure it.
	conn := func(t *testing.T) *pgx.Conn {
		c, err := pgx.Connect(t.Context(), dbURL)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close(context.WithoutCancel(t.Context())) })
		return c
	}
	// terminate ends c's backend from another session.
	terminate := func(t *testing.T, c *pgx.Conn) {
		var ok bool
		require.NoError(t, pool.QueryRow(t.Context(), `SELECT pg_terminate_backend($1)`, c.PgConn().PID()).Scan(&ok))
		require.True(t, ok)
	}

	for _, tc := range []struct {
		name string
		want errorClass
		err  func(t *testing.T) error
		// also lists further errors.Is targets the translated error must keep.
		also []error
	}{
		{"ExpiredContextOnPool", classTimeout, func(t *testing.T) error {
			ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
			defer cancel()
			_, err := pool.Exec(ctx, `SELECT 1`)
			return err
		}, []error{context.DeadlineExceeded}},
		{"ExpiredContextOnConnection", classTimeout, func(t *testing.T) error {
			// pgconn reports it as SafeToRetry (nothing was sent), which must not read
			// as an outage.
			ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
			defer cancel()
			_, err := conn(t).Exec(ctx, `SELECT 1`)
			return err
		}, []error{context.DeadlineExceeded}},
		{"DeadlineDuringQuery", classTimeout, func(t *testing.T) error {
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			_, err := pool.Exec(ctx, `SELECT pg_sleep(10)`)
			return err
		}, []error{context.DeadlineExceeded}},
		{"CanceledDuringQuery", classCanceled, func(t *testing.T) error {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			c := conn(t)
			// Cancel once the statement is known to run: its backend shows it as active.
			go func() {
				defer cancel()
				for ctx.Err() == nil {
					var active bool
					err := pool.QueryRow(ctx, `SELECT state = 'active' FROM pg_stat_activity WHERE pid = $1`,
						c.PgConn().PID()).Scan(&active)
					if err == nil && active {
						return
					}
				}
			}()
			_, err := c.Exec(ctx, `SELECT pg_sleep(10)`)
			return err
		}, nil},
		{"StatementTimeout", classTimeout, func(t *testing.T) error {
			c := conn(t)
			_, err := c.Exec(t.Context(), `SET statement_timeout = 50`)
			require.NoError(t, err)
			_, err = c.Exec(t.Context(), `SELECT pg_sleep(1)`)
			return err
		}, nil},
		{"LockTimeout", classTimeout, func(t *testing.T) error {
			holder, err := pool.Begin(t.Context())
			require.NoError(t, err)
			defer func() { _ = holder.Rollback(context.WithoutCancel(t.Context())) }()
			_, err = holder.Exec(t.Context(), `LOCK TABLE locked`)
			require.NoError(t, err)
			c := conn(t)
			_, err = c.Exec(t.Context(), `SET lock_timeout = 50`)
			require.NoError(t, err)
			_, err = c.Exec(t.Context(), `SELECT count(*) FROM locked`)
			return err
		}, nil},
		{"ClosedPort", classUnavailable, func(t *testing.T) error {
			u := withHostPort(t, dbURL, closedPort(t))
			_, err := pgx.Connect(t.Context(), u)
			return err
		}, nil},
		{"ConnectTimeout", classUnavailable, func(t *testing.T) error {
			// A server that accepts TCP and never answers: the pool's connect timeout
			// ends the attempt, an outage even though a deadline fired.
			p, err := pgxpool.New(t.Context(), withHostPort(t, dbURL, silentPort(t))+"&connect_timeout=1")
			require.NoError(t, err)
			defer p.Close()
			_, err = p.Exec(t.Context(), `SELECT 1`)
			return err
		}, nil},
		{"TerminatedBackend", classUnavailable, func(t *testing.T) error {
			c := conn(t)
			terminate(t, c)
			_, err := c.Exec(t.Context(), `SELECT 1`)
			return err
		}, nil},
		{"DeadConnection", classUnavailable, func(t *testing.T) error {
			c := conn(t)
			terminate(t, c)
			_, _ = c.Exec(t.Context(), `SELECT 1`) // learns that the backend is gone
			_, err := c.Exec(t.Context(), `SELECT 1`)
			return err
		}, []error{queue.ErrOutcomeUnknown}}, // pgx says "conn closed", as for a connection that broke mid-statement
		{"ClosedPool", classUnavailable, func(t *testing.T) error {
			p, err := pgxpool.New(t.Context(), dbURL)
			require.NoError(t, err)
			p.Close()
			_, err = p.Exec(t.Context(), `SELECT 1`)
			return err
		}, nil},
		{"ReadOnlyServer", classUnavailable, func(t *testing.T) error {
			// What a standby in recovery (or a primary being demoted) answers every
			// write: the database is away, not the statement at fault.
			c := conn(t)
			_, err := c.Exec(t.Context(), `SET default_transaction_read_only = on`)
			require.NoError(t, err)
			_, err = c.Exec(t.Context(), `INSERT INTO locked VALUES (1)`)
			return err
		}, nil},
		{"ReadOnlyServerRefusedAtConnect", classUnavailable, func(t *testing.T) error {
			// target_session_attrs=read-write refuses a server that cannot take writes.
			_, err := pgx.Connect(t.Context(), dbURL+"&target_session_attrs=read-write&options=-c%20default_transaction_read_only%3Don")
			return err
		}, nil},
		{"ConnectionCutDuringStatement", classUnavailable, func(t *testing.T) error {
			// The server's machine dies under a running statement: no answer, only a
			// broken connection. The statement may have committed.
			px := cuttableProxy(t, dbURL)
			c, err := pgx.Connect(t.Context(), withHostPort(t, dbURL, px.port))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close(context.WithoutCancel(t.Context())) })
			go func() {
				for t.Context().Err() == nil {
					var active bool
					err := pool.QueryRow(t.Context(), `SELECT state = 'active' AND query = 'SELECT pg_sleep(10)'
						FROM pg_stat_activity WHERE pid = $1`, c.PgConn().PID()).Scan(&active)
					if err == nil && active {
						px.cut()
						return
					}
				}
			}()
			_, err = c.Exec(t.Context(), `SELECT pg_sleep(10)`)
			return err
		}, []error{queue.ErrOutcomeUnknown}},
		{"UniqueViolation", classConflict, func(t *testing.T) error {
			_, err := pool.Exec(t.Context(), `INSERT INTO uniq VALUES (1), (1)`)
			return err
		}, nil},
		{"NoRows", classNotFound, func(t *testing.T) error {
			var x int
			return pool.QueryRow(t.Context(), `SELECT 1 WHERE false`).Scan(&x)
		}, nil},
		{"InvalidText", classInternal, func(t *testing.T) error {
			_, err := pool.Exec(t.Context(), `SELECT $1::text`, "a\x00b")
			return err
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			raw := tc.err(t)
			require.Error(t, raw)
			got := interpretError(raw)
			require.Equal(t, []errorClass{tc.want}, classesOf(got), "raw error: %v", raw)
			for _, target := range tc.also {
				require.ErrorIs(t, got, target)
			}
			if !slices.Contains(tc.also, queue.ErrOutcomeUnknown) {
				require.NotErrorIs(t, got, queue.ErrOutcomeUnknown, "raw error: %v", raw)
			}
			if tc.want == classConflict {
				var ce *queue.ConflictError
				require.False(t, errors.As(got, &ce), "a database conflict must not carry a client message")
			}
		})
	}

	t.Run("Nil", func(t *testing.T) {
		t.Parallel()
		require.NoError(t, interpretError(nil))
	})
}

// TestIsTransient: every timeout and outage is worth retrying; a refused statement
// is not.
func TestIsTransient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"Unavailable", interpretError(&net.OpError{Op: "read", Err: errors.New("connection reset")}), true},
		{"Timeout", interpretError(context.DeadlineExceeded), true},
		{"Validation", queue.Invalid("queue", "queue is required"), false},
		{"Plain", errors.New("boom"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, IsTransient(tc.err))
		})
	}
}

// withHostPort returns dbURL pointing at 127.0.0.1:port.
func withHostPort(t *testing.T, dbURL string, port int) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return u.String()
}

// closedPort returns a local port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// silentPort returns the port of a listener that accepts connections and never
// writes a byte, closed with the test.
func silentPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
	return ln.Addr().(*net.TCPAddr).Port
}

// TestFaultOfTheRecordOrOfTheServer: the spool drainer quarantines a record only for
// a data fault; a reason stored by an earlier release is replayed when its SQLSTATE
// names anything else.
func TestFaultOfTheRecordOrOfTheServer(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	_, err := pool.Exec(t.Context(), `CREATE TABLE t (x int NOT NULL CHECK (x > 0))`)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		sql  string
		data bool
	}{
		{"BadJSON", `SELECT '{'::jsonb`, true},
		{"OutOfRange", `SELECT 99999999999::int`, true},
		{"NotNull", `INSERT INTO t VALUES (NULL)`, true},
		{"Check", `INSERT INTO t VALUES (-1)`, true},
		{"UndefinedFunction", `SELECT queen.no_such_function()`, false},
		{"ReadOnly", `SET TRANSACTION READ ONLY; INSERT INTO t VALUES (1)`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tx, err := pool.Begin(t.Context())
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(context.WithoutCancel(t.Context())) }()
			_, err = tx.Exec(t.Context(), tc.sql)
			require.Error(t, err)
			require.Equal(t, tc.data, IsDataFault(interpretError(err)), "%v", err)
			// The text a quarantine kept: replayed again unless it is a data fault.
			require.Equal(t, !tc.data, IsServerFaultReason(interpretError(err).Error()), "%v", err)
		})
	}
	for reason, want := range map[string]bool{
		`queue "x" is full: maxSize reached`:                                       false,
		"items[0].queue must be at most 255 characters":                            false,
		"ERROR: cannot execute INSERT in a read-only transaction (SQLSTATE 25006)": true,
		"ERROR: permission denied for table messages (SQLSTATE 42501)":             true,
		`ERROR: invalid input syntax for type json (SQLSTATE 22P02)`:               false,
	} {
		require.Equal(t, want, IsServerFaultReason(reason), reason)
	}
}

// proxy forwards TCP connections to a PostgreSQL server until cut closes them all.
type proxy struct {
	port int
	cut  func()
}

// cuttableProxy starts a proxy to dbURL's server, closed with the test.
func cuttableProxy(t *testing.T, dbURL string) proxy {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	cut := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
		conns = nil
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", u.Host)
			if err != nil {
				_ = client.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, client, server)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(server, client); _ = server.Close() })
			wg.Go(func() { _, _ = io.Copy(client, server); _ = client.Close() })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		cut()
		wg.Wait()
	})
	return proxy{port: ln.Addr().(*net.TCPAddr).Port, cut: cut}
}
