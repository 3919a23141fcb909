// Package schema holds queen's PostgreSQL DDL and SQL functions as embedded .sql
// files and applies them idempotently at every boot under an advisory lock, so that
// one to three replicas booting together never race (architecture.md §2.3).
package schema

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed sql/*.sql
var files embed.FS

// applyLockKey is the advisory lock (two-key form) held while the schema is applied.
const (
	applyLockNamespace = 0x51554545 // "QUEE"
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

// SQL returns the full DDL in apply order, as `queen schema` prints it.
func SQL() string {
	var b strings.Builder
	for _, name := range Files() {
		data, _ := files.ReadFile("sql/" + name)
		fmt.Fprintf(&b, "-- %s\n%s\n", name, data)
	}
	return b.String()
}

// Version is a short hash of the embedded DDL. It names test template databases and is
// recorded in queen.schema_version at every apply.
func Version() string {
	sum := sha256.Sum256([]byte(SQL()))
	return hex.EncodeToString(sum[:])[:16]
}

// Apply runs every embedded file in order inside one transaction on conn, holding a
// transaction-scoped advisory lock so that concurrent boots apply one after another.
func Apply(ctx context.Context, conn *pgx.Conn) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("schema: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, $2)", int32(applyLockNamespace), int32(applyLockID)); err != nil {
		return fmt.Errorf("schema: lock: %w", err)
	}
	for _, name := range Files() {
		data, err := files.ReadFile("sql/" + name)
		if err != nil {
			return fmt.Errorf("schema: read %s: %w", name, err)
		}
		if _, err := tx.Exec(ctx, string(data)); err != nil {
			return fmt.Errorf("schema: apply %s: %w", name, err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO queen.schema_version (version, applied_at) VALUES ($1, now())
		ON CONFLICT (version) DO UPDATE SET applied_at = now()`, Version()); err != nil {
		return fmt.Errorf("schema: record version: %w", err)
	}
	return tx.Commit(ctx)
}
