package schema

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"
)

// MissingIndex is an index IndexBuilder would build: absent, with no equivalent valid
// index under another name, or left invalid by an interrupted build.
type MissingIndex struct {
	Table, Index string
	// Invalid is set when the index exists but is invalid: it must be dropped first.
	Invalid bool
	// SQL is what the schema's owner runs to build it, outside a transaction.
	SQL string
}

// MissingIndexes lists, in build order and changing nothing, the managed indexes that
// IndexBuilder would build on tables that exist. A broker that applies no DDL
// (QUEEN_APPLY_SCHEMA=0) runs it instead of the builder, so that what a DBA must still
// build is logged: the schema script creates these indexes only with a new table. An
// index that is missing only its name (an equivalent one exists) or that exists with
// another definition is not listed: the builder would build neither.
func MissingIndexes(ctx context.Context, conn *pgx.Conn) ([]MissingIndex, error) {
	var missing []MissingIndex
	for _, ix := range managedIndexes {
		state, err := tableIndexes(ctx, conn, ix.Table)
		if err != nil {
			return nil, err
		}
		if state == nil {
			continue
		}
		cur, exists := state[ix.Name]
		switch {
		case exists && cur.Valid:
			continue
		case !exists:
			if _, ok := equivalentAmong(ix, state, slices.Sorted(maps.Keys(state))); ok {
				continue
			}
		}
		unique := ""
		if ix.Unique {
			unique = "UNIQUE "
		}
		sql := fmt.Sprintf("CREATE %sINDEX CONCURRENTLY IF NOT EXISTS %s ON %s %s",
			unique, pgx.Identifier{ix.Name}.Sanitize(), ix.Table, ix.Def)
		if exists {
			sql = "DROP INDEX CONCURRENTLY IF EXISTS queen." + pgx.Identifier{ix.Name}.Sanitize() + "; " + sql
		}
		missing = append(missing, MissingIndex{Table: ix.Table, Index: ix.Name, Invalid: exists, SQL: sql})
	}
	return missing, nil
}
