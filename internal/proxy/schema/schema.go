package schema

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

//go:embed sql/*.sql
var files embed.FS

// applyLockKey is the advisory lock (two-key form) held while the schema is applied.
const (
	applyLockNamespace = 0x51505258 // "QPRX", distinct from the broker's
	applyLockID        = 1
)

// Files returns the embedded SQL files in apply order (lexical order of their names).
func Files() []string {
	entries, err := fs.ReadDir(files, "sql")
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// SQL returns the full DDL in apply order, as `queen-proxy -print-schema` prints it.
func SQL() string {
	var b strings.Builder
	for _, name := range Files() {
		data, _ := files.ReadFile("sql/" + name)
		fmt.Fprintf(&b, "-- %s\n%s\n", name, data)
	}
	return b.String()
}

// Version is a short hash of the embedded DDL. It names test template databases and is
// recorded in queen_proxy.schema_version at every apply.
func Version() string {
	sum := sha256.Sum256([]byte(SQL()))
	return hex.EncodeToString(sum[:])[:16]
}

// Apply brings the database to the embedded schema. It holds a transaction-scoped
// advisory lock so concurrent boots apply one after another, and does nothing when this
// exact version is already recorded: DDL such as CREATE INDEX IF NOT EXISTS locks its
// table even when the index exists, so re-running it under live traffic from other
// replicas would stall or deadlock them. A deadlock or lock timeout while applying a new
// version is retried a few times.
func Apply(ctx context.Context, conn *pgx.Conn) error {
	var err error
	for attempt := 1; attempt <= 5; attempt++ {
		if err = applyOnce(ctx, conn); err == nil || !isLockConflict(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		}
	}
	return err
}

func applyOnce(ctx context.Context, conn *pgx.Conn) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("proxy schema: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, $2)", int32(applyLockNamespace), int32(applyLockID)); err != nil {
		return fmt.Errorf("proxy schema: lock: %w", err)
	}
	var current bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('queen_proxy.schema_version') IS NOT NULL`).Scan(&current); err != nil {
		return fmt.Errorf("proxy schema: inspect: %w", err)
	}
	if current {
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM queen_proxy.schema_version WHERE version = $1)`,
			Version()).Scan(&current); err != nil {
			return fmt.Errorf("proxy schema: inspect: %w", err)
		}
	}
	if current {
		return tx.Commit(ctx)
	}
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '5s'"); err != nil {
		return fmt.Errorf("proxy schema: %w", err)
	}
	for _, name := range Files() {
		data, err := files.ReadFile("sql/" + name)
		if err != nil {
			return fmt.Errorf("proxy schema: read %s: %w", name, err)
		}
		if _, err := tx.Exec(ctx, string(data)); err != nil {
			return fmt.Errorf("proxy schema: apply %s: %w", name, err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO queen_proxy.schema_version (version, applied_at) VALUES ($1, now())
		ON CONFLICT (version) DO UPDATE SET applied_at = now()`, Version()); err != nil {
		return fmt.Errorf("proxy schema: record version: %w", err)
	}
	return tx.Commit(ctx)
}

// isLockConflict reports a deadlock (40P01) or lock timeout (55P03).
func isLockConflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "55P03")
}
