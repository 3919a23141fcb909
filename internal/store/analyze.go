package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// analyzeTables are the tables whose statistics the hot statements are planned with:
// every one of them grows with the partition count or the backlog.
var analyzeTables = []string{
	"queues", "partitions", "partition_lookup", "partition_consumers", "partition_ready",
	"queue_consumers", "messages",
}

// AnalyzeMinRows is the size below which a table is left to autovacuum: plans of a
// table this small cost little whichever they are.
const AnalyzeMinRows = 500

// sqlGrownTables lists the hot tables this role may analyze that hold at least $2
// live rows and more than twice the rows their statistics say (a table never
// analyzed has none). Churn (as many rows deleted as added) does not count.
const sqlGrownTables = `SELECT c.relname::text
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'queen'
JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE c.relname = ANY ($1) AND s.n_live_tup >= $2 AND s.n_live_tup > 2 * greatest(c.reltuples, 0)
  AND pg_has_role(current_user, c.relowner, 'MEMBER')
ORDER BY c.relname`

// AnalyzeGrownTables runs ANALYZE on each hot table that has more than doubled since
// PostgreSQL last gathered its statistics, and returns their names. A plan that
// plpgsql cached while a table was small stays until the table is analyzed again,
// and autovacuum analyzes at most once per autovacuum_naptime: in between, a queue
// that grew from a hundred partitions to ten thousand kept plans that scan tables
// its statements look up by key. ANALYZE invalidates those plans in every session. A
// table that autovacuum (or anything) is analyzing or vacuuming is skipped until the
// next call.
func (s *Store) AnalyzeGrownTables(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, sqlGrownTables, analyzeTables, AnalyzeMinRows)
	if err != nil {
		return nil, fmt.Errorf("store: grown tables: %w", interpretError(err))
	}
	grown, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: grown tables: %w", interpretError(err))
	}
	for _, t := range grown {
		// The names come from the fixed list above, so the identifier is safe.
		if _, err := s.pool.Exec(ctx, "ANALYZE (SKIP_LOCKED) queen."+pgx.Identifier{t}.Sanitize()); err != nil {
			return nil, fmt.Errorf("store: analyze queen.%s: %w", t, interpretError(err))
		}
	}
	return grown, nil
}
