package schema

import (
	"context"
	"embed"
	"io/fs"

	"github.com/jackc/pgx/v5"

	broker "github.com/queenmq/queen/internal/schema"
)

//go:embed sql/*.sql
var files embed.FS

// applyLockNamespace is the first key of the advisory lock held while the schema is
// applied: "QPRX", distinct from the broker's, so a database shared with a broker never
// serialises the two boots.
const applyLockNamespace = 0x51505258

// set is the proxy's DDL as a schema set of its own.
func set() broker.Set {
	sub, err := fs.Sub(files, "sql")
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	return broker.NewSet(sub, applyLockNamespace, "queen_proxy.schema_version", "proxy schema")
}

// Files returns the embedded SQL files in apply order (lexical order of their names).
func Files() []string { return set().Files() }

// SQL returns the full DDL in apply order, as `queen-proxy -print-schema` prints it.
func SQL() string { return set().SQL() }

// Version is a short hash of the embedded DDL. It names test template databases and is
// recorded in queen_proxy.schema_version at every apply.
func Version() string { return set().Version() }

// Apply brings the database to the embedded schema (see the broker schema's Set.Apply:
// a transaction-scoped advisory lock, nothing done when this version is recorded,
// lock conflicts retried).
func Apply(ctx context.Context, conn *pgx.Conn) error { return set().Apply(ctx, conn) }
