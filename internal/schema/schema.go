// Package schema holds queen's PostgreSQL DDL and SQL functions as embedded .sql
// files and applies them idempotently at every boot under an advisory lock, so that
// one to three replicas booting together never race. [Set] is the mechanism, shared
// with queen-proxy's own schema.
package schema

import (
	"context"
	"embed"
	"io/fs"

	"github.com/jackc/pgx/v5"
)

//go:embed sql/*.sql
var files embed.FS

// applyLockKey is the advisory lock (two-key form) held while the schema is applied.
const (
	applyLockNamespace = 0x51554545 // "QUEE"
	applyLockID        = 1
)

// broker is the broker's Set.
func broker() Set {
	sub, err := fs.Sub(files, "sql")
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	return NewSet(sub, applyLockNamespace, "queen.schema_version", "schema").Leveled(Level)
}

// Files returns the embedded SQL files in apply order (lexical order of their names).
func Files() []string { return broker().Files() }

// SQL returns the full DDL in apply order, as `queen schema` prints it.
func SQL() string { return broker().SQL() }

// Schemas returns the schemas the DDL creates (queen, queen_streams): what a backup
// must hold.
func Schemas() []string { return broker().Schemas() }

// Version is a short hash of the embedded DDL. It names test template databases and is
// recorded in queen.schema_version at every apply.
func Version() string { return broker().Version() }

// Apply brings the database to the embedded schema (see [Set.Apply]).
func Apply(ctx context.Context, conn *pgx.Conn) error { return broker().Apply(ctx, conn) }

// Script is the DDL as a psql script that also records the version, as `queen schema`
// prints it for a DBA to apply (see [Set.Script]).
func Script() string { return broker().Script() }

// Check reports, changing nothing, whether the database holds this schema or a newer
// one; a *NotAppliedError when not (see [Set.Check]).
func Check(ctx context.Context, conn *pgx.Conn) error { return broker().Check(ctx, conn) }
