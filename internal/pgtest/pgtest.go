package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queenmq/queen/internal/schema"
)

// EnvURL names the environment variable that holds the test cluster's URL.
const EnvURL = "QUEEN_TEST_DATABASE_URL"

// templateLock is the session advisory lock (two-key form) that serializes template
// builds across test processes. The schema's own apply lock is a different key.
const (
	templateLockNamespace = 0x51505447 // "QPTG"
	templateLockID        = 1
)

// poolSize is the connection limit of a NewDB pool. Small on purpose: a test run has
// hundreds of databases on one server with max_connections=300.
const poolSize = 4

const (
	setupTimeout   = 2 * time.Minute
	cleanupTimeout = 30 * time.Second
)

// process holds what is created at most once per test process. A failure is kept and
// reported to every later caller.
var process struct {
	once     sync.Once
	err      error
	admin    *pgxpool.Pool // on the maintenance database, for CREATE/DROP DATABASE
	template string
}

// URL returns QUEEN_TEST_DATABASE_URL. It skips the test under -short and fails it
// if the variable is unset.
func URL(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs PostgreSQL; skipped with -short")
	}
	u := os.Getenv(EnvURL)
	if u == "" {
		t.Fatal("QUEEN_TEST_DATABASE_URL unset; use make test")
	}
	return u
}

// NewDB returns a pool of at most 4 connections on a fresh database cloned from the
// schema template. The pool is closed when the test ends, and the database dropped if
// the test passed (kept, with its URL logged, if it failed).
func NewDB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	dbURL := NewDBURL(t)
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", dbURL, err)
	}
	cfg.MaxConns = poolSize
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatalf("pgtest: open pool: %v", err)
	}
	t.Cleanup(pool.Close) // registered after the drop, so it runs before it
	if err := pool.Ping(t.Context()); err != nil {
		t.Fatalf("pgtest: ping %s: %v", dbURL, err)
	}
	return pool
}

// NewDBURL creates a fresh database like NewDB and returns its URL, for a test that
// opens its own connections (a whole daemon). Whatever the test opens must be closed
// by the test's own cleanups; leftovers are disconnected by DROP DATABASE … WITH (FORCE).
func NewDBURL(t testing.TB) string {
	t.Helper()
	adminURL := URL(t)
	admin, template := setup(t, adminURL)

	name := "queen_t_" + randomHex(6)
	dbURL, err := withDatabase(adminURL, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), setupTimeout)
	defer cancel()
	sql := fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s STRATEGY FILE_COPY", ident(name), ident(template))
	if _, err := admin.Exec(ctx, sql); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}

	cleanupCtx := context.WithoutCancel(t.Context())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pgtest: test failed; keeping database %s: %s", name, dbURL)
			return
		}
		ctx, cancel := context.WithTimeout(cleanupCtx, cleanupTimeout)
		defer cancel()
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return dbURL
}

// setup makes sure the process-wide admin pool and the schema template exist.
func setup(t testing.TB, adminURL string) (*pgxpool.Pool, string) {
	t.Helper()
	process.once.Do(func() {
		// Not t.Context(): the pool and template outlive the test that builds them.
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		cfg, err := pgxpool.ParseConfig(adminURL)
		if err != nil {
			process.err = fmt.Errorf("parse %s: %w", EnvURL, err)
			return
		}
		cfg.MaxConns = poolSize
		process.admin, process.err = pgxpool.NewWithConfig(ctx, cfg)
		if process.err != nil {
			return
		}
		process.template = "queen_tmpl_" + schema.Version()
		process.err = ensureTemplate(ctx, adminURL, process.template)
	})
	if process.err != nil {
		t.Fatalf("pgtest: %v", process.err)
	}
	return process.admin, process.template
}

// ensureTemplate creates the database name with the schema applied, unless it exists.
// It is safe to call from several processes at once: builds are serialized by a
// session advisory lock on one dedicated connection, and happen in name+"_build",
// renamed to name only when complete.
func ensureTemplate(ctx context.Context, adminURL, name string) (err error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()

	if ok, err := databaseExists(ctx, conn, name); err != nil || ok {
		return err
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1, $2)", int32(templateLockNamespace), int32(templateLockID)); err != nil {
		return fmt.Errorf("lock template build: %w", err)
	}
	defer func() {
		// Same connection as the lock. If this fails, closing the connection releases it.
		_, uerr := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1, $2)", int32(templateLockNamespace), int32(templateLockID))
		if err == nil && uerr != nil {
			err = fmt.Errorf("unlock template build: %w", uerr)
		}
	}()
	// Another process may have finished it while we waited for the lock.
	if ok, err := databaseExists(ctx, conn, name); err != nil || ok {
		return err
	}
	return buildTemplate(ctx, conn, adminURL, name)
}

// buildTemplate builds the template under the lock held on conn.
func buildTemplate(ctx context.Context, conn *pgx.Conn, adminURL, name string) error {
	build := name + "_build"
	// Left over by a process that died mid-build: its session, and lock, are gone.
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(build)+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop stale %s: %w", build, err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident(build)); err != nil {
		return fmt.Errorf("create %s: %w", build, err)
	}
	buildURL, err := withDatabase(adminURL, build)
	if err != nil {
		return err
	}
	bconn, err := pgx.Connect(ctx, buildURL)
	if err != nil {
		return fmt.Errorf("connect %s: %w", build, err)
	}
	applyErr := schema.Apply(ctx, bconn)
	_ = bconn.Close(ctx)
	if applyErr != nil {
		return fmt.Errorf("apply schema to %s: %w", build, applyErr)
	}
	// RENAME waits (up to 5 s) for the closed connection's backend to exit. No one may
	// connect to a template afterwards, or CREATE DATABASE … TEMPLATE would fail.
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+ident(build)+" RENAME TO "+ident(name)); err != nil {
		return fmt.Errorf("rename %s: %w", build, err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+ident(name)+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"); err != nil {
		return fmt.Errorf("mark %s as template: %w", name, err)
	}
	return nil
}

func databaseExists(ctx context.Context, conn *pgx.Conn, name string) (bool, error) {
	var ok bool
	err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look up database %s: %w", name, err)
	}
	return ok, nil
}

// withDatabase returns adminURL with its database replaced by name.
func withDatabase(adminURL, name string) (string, error) {
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("%s must be a postgres:// URL", EnvURL)
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String(), nil
}

func ident(name string) string {
	return pgx.Identifier{name}.Sanitize()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
