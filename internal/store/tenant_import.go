package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queenmq/queen/internal/queue"
)

// Modes of TenantImportState.
const (
	// TenantImportStructure upserts the given queues and partitions by id, options
	// included, and touches nothing else.
	TenantImportStructure = "structure"
	// TenantImportAll makes the tenant's rows in every state table equal to the given
	// ones; queues and partitions not given are deleted with their messages.
	TenantImportAll = "all"
)

// tenantAnalytics are the statements that delete a tenant's rows from the tables of
// analytics and history, which a move does not carry (they describe this cell's
// traffic): keyed by table, each with $1 = prefix and $2 = tenant.
var tenantAnalytics = []string{
	`DELETE FROM queen.queue_activity t WHERE starts_with(t.queue_name::text, $1)`,
	`DELETE FROM queen.queue_lag_metrics t WHERE starts_with(t.queue_name::text, $1)`,
	`DELETE FROM queen.queue_parked_activity t WHERE starts_with(t.queue_name::text, $1)`,
	`DELETE FROM queen.queue_parked_replica t WHERE starts_with(t.queue_name::text, $1)`,
	`DELETE FROM queen.consumer_lag_history t WHERE (starts_with(t.queue_name, $1) OR starts_with(t.consumer_group, $1))`,
	`DELETE FROM queen.stats t WHERE (starts_with(t.stat_key::text, $1) OR t.queue_id IN ` + sqlTenantQueues + `)`,
	`DELETE FROM queen.stats_history t WHERE starts_with(t.stat_key::text, $1)`,
	`DELETE FROM queen.retention_history t WHERE t.partition_id IN ` + sqlTenantPartitions,
	`DELETE FROM queen.messages_consumed t WHERE t.partition_id IN ` + sqlTenantPartitions,
	`DELETE FROM queen.tenant_usage t WHERE t.tenant = $2`,
}

// TenantImportState writes tenant's state rows (JSON arrays of to_jsonb rows, keyed
// like TenantExportState) in one transaction, as mode says. A row that is not the
// tenant's is a *queue.ValidationError naming its key; a row referencing one this
// cell lacks (a DLQ entry of a message not imported) is a *queue.ConflictError. An
// absent key is an empty array.
func (s *Store) TenantImportState(ctx context.Context, tenant, mode string, state map[string]json.RawMessage) error {
	if err := checkOptionsRecords(state["queues"]); err != nil {
		return err
	}
	args := func(key string) []any {
		rows := state[key]
		if len(rows) == 0 || string(rows) == "null" {
			rows = json.RawMessage(`[]`)
		}
		return []any{tenantPrefix(tenant), tenant, string(rows)}
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cols, stamps, err := tenantColumns(ctx, tx)
		if err != nil {
			return err
		}
		for _, tt := range tenantTables[:2] { // queues, then partitions
			if err := tenantCheckOwned(ctx, tx, tt, args(tt.key)); err != nil {
				return err
			}
			if err := tenantCheckTimestamps(ctx, tx, tt, stamps[tt.table], args(tt.key)[2]); err != nil {
				return err
			}
			if err := tenantUpsert(ctx, tx, tt, cols[tt.table], args(tt.key)); err != nil {
				return err
			}
			if mode != TenantImportAll {
				continue
			}
			sql := fmt.Sprintf(`DELETE FROM %s t WHERE %s AND $1::text IS NOT NULL AND $2::text IS NOT NULL AND t.id NOT IN
                (SELECT r.id FROM jsonb_populate_recordset(NULL::%s, $3::jsonb) r WHERE r.id IS NOT NULL)`,
				tt.table, tt.owned, tt.table)
			if _, err := tx.Exec(ctx, sql, args(tt.key)...); err != nil {
				return tenantInputError("tenant import state", tt.key, err)
			}
		}
		if mode != TenantImportAll {
			return nil
		}
		rest := tenantTables[2:]
		for _, tt := range slices.Backward(rest) {
			if _, err := tx.Exec(ctx, fmt.Sprintf(`DELETE FROM %s t WHERE %s AND $1::text IS NOT NULL AND $2::text IS NOT NULL`, tt.table, tt.owned),
				tenantPrefix(tenant), tenant); err != nil {
				return fmt.Errorf("delete the tenant's %s: %w", tt.key, interpretError(err))
			}
		}
		for _, tt := range rest {
			a := args(tt.key)
			if err := tenantCheckOwned(ctx, tx, tt, a); err != nil {
				return err
			}
			if err := tenantCheckTimestamps(ctx, tx, tt, stamps[tt.table], a[2]); err != nil {
				return err
			}
			list := strings.Join(cols[tt.table], ", ")
			sql := fmt.Sprintf(`INSERT INTO %s (%s) SELECT %s FROM jsonb_populate_recordset(NULL::%s, $3::jsonb)
                WHERE $1::text IS NOT NULL AND $1::text IS NOT NULL AND $2::text IS NOT NULL`, tt.table, list, list, tt.table)
			if _, err := tx.Exec(ctx, sql, a...); err != nil {
				return tenantInputError("tenant import state", tt.key, err)
			}
		}
		return advanceKVVersions(ctx, tx, args("kv")[2])
	})
	if err != nil {
		return fmt.Errorf("store: tenant import state: %w", err)
	}
	return nil
}

// advanceKVVersions moves the KV version sequence past the largest version of the
// imported KV rows (a JSON array of to_jsonb rows): a version must never come back to
// a key, or a client's write expecting the version it read before a move would apply
// over a value it never saw. The sequence is never moved back: a gap of up to
// kvVersionSteps is walked with nextval (safe beside concurrent writes); a larger one
// is set at once, only if the sequence is still below it.
func advanceKVVersions(ctx context.Context, tx pgx.Tx, rows any) error {
	var top, last *int64
	err := tx.QueryRow(ctx, `SELECT (SELECT max(r.version) FROM jsonb_populate_recordset(NULL::queen.kv_entries, $1::jsonb) r),
            (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM queen.kv_version_seq)`, rows).Scan(&top, &last)
	if err != nil {
		return tenantInputError("tenant import state", "kv", err)
	}
	if top == nil || last == nil || *top <= *last {
		return nil
	}
	if gap := *top - *last; gap <= kvVersionSteps {
		_, err = tx.Exec(ctx, `SELECT count(nextval('queen.kv_version_seq')) FROM generate_series(1, $1::bigint)`, gap)
	} else {
		_, err = tx.Exec(ctx, `SELECT setval('queen.kv_version_seq', $1::bigint)
            WHERE $1::bigint > (SELECT last_value FROM queen.kv_version_seq)`, *top)
	}
	if err != nil {
		return fmt.Errorf("advance the KV versions: %w", interpretError(err))
	}
	return nil
}

// kvVersionSteps is the largest gap advanceKVVersions walks one nextval at a time.
const kvVersionSteps = 100000

// tenantColumns returns the columns each table of tenantTables (and messages) is
// written with, in table order: all but the bigserial id of the serial ones; and, by
// table, its timestamp columns.
func tenantColumns(ctx context.Context, tx pgx.Tx) (cols map[string][]string, stamps map[string][]tenantStamp, err error) {
	cols = make(map[string][]string, len(tenantTables)+1)
	stamps = make(map[string][]tenantStamp, len(tenantTables)+1)
	tables := []tenantTable{{table: "queen.messages"}}
	for _, tt := range append(tables, tenantTables...) {
		rows, err := tx.Query(ctx, `SELECT attname::text, atttypid = ANY ('{timestamptz,timestamp}'::regtype[]), atthasdef
            FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, tt.table)
		if err != nil {
			return nil, nil, fmt.Errorf("columns of %s: %w", tt.table, interpretError(err))
		}
		var name string
		var stamp, hasDefault bool
		_, err = pgx.ForEachRow(rows, []any{&name, &stamp, &hasDefault}, func() error {
			if stamp {
				stamps[tt.table] = append(stamps[tt.table], tenantStamp{name: name, required: hasDefault})
			}
			if !tt.serial || name != "id" {
				cols[tt.table] = append(cols[tt.table], pgx.Identifier{name}.Sanitize())
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("columns of %s: %w", tt.table, interpretError(err))
		}
	}
	return cols, stamps, nil
}

// tenantCheckOwned refuses rows (args[2]) of tt that are not the tenant's.
func tenantCheckOwned(ctx context.Context, tx pgx.Tx, tt tenantTable, args []any) error {
	var n int64
	sql := fmt.Sprintf(`SELECT count(*) FROM jsonb_populate_recordset(NULL::%s, $3::jsonb) t
        WHERE NOT coalesce(%s, false) AND $1::text IS NOT NULL AND $2::text IS NOT NULL`,
		tt.table, tt.owned)
	if err := tx.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return tenantInputError("tenant import state", tt.key, err)
	}
	if n > 0 {
		return queue.Invalid(tt.key, "%s: %d row(s) are not the tenant's", tt.key, n)
	}
	return nil
}

// tenantUpsert inserts rows (args[2]) of tt, updating every column of a row whose id
// exists.
func tenantUpsert(ctx context.Context, tx pgx.Tx, tt tenantTable, cols []string, args []any) error {
	set := make([]string, 0, len(cols))
	for _, c := range cols {
		if c != `"id"` {
			set = append(set, c+" = excluded."+c)
		}
	}
	list := strings.Join(cols, ", ")
	sql := fmt.Sprintf(`INSERT INTO %s (%s) SELECT %s FROM jsonb_populate_recordset(NULL::%s, $3::jsonb)
        WHERE $1::text IS NOT NULL AND $1::text IS NOT NULL AND $2::text IS NOT NULL
        ON CONFLICT (id) DO UPDATE SET %s`, tt.table, list, list, tt.table, strings.Join(set, ", "))
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		return tenantInputError("tenant import state", tt.key, err)
	}
	return nil
}

// TenantImportMessages inserts message rows (a JSON array of to_jsonb rows) of tenant,
// skipping those whose id (or partition and transaction id) exists, and returns how
// many it inserted. A row naming a partition this cell does not hold for the tenant
// is a *queue.ConflictError, and nothing is inserted.
func (s *Store) TenantImportMessages(ctx context.Context, tenant string, rows json.RawMessage) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cols, stamps, err := tenantColumns(ctx, tx)
		if err != nil {
			return err
		}
		messages := tenantTable{key: "messages", table: "queen.messages"}
		if err := tenantCheckTimestamps(ctx, tx, messages, stamps[messages.table], string(rows)); err != nil {
			return err
		}
		var missing int64
		err = tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT DISTINCT r.partition_id
                FROM jsonb_populate_recordset(NULL::queen.messages, $2::jsonb) r) r
            WHERE r.partition_id IS NULL OR r.partition_id NOT IN `+sqlTenantPartitions,
			tenantPrefix(tenant), string(rows)).Scan(&missing)
		if err != nil {
			return tenantInputError("tenant import messages", "messages", err)
		}
		if missing > 0 {
			return queue.Conflict("messages name %d partition(s) this cell does not hold for the tenant: import the state (mode structure) first", missing)
		}
		list := strings.Join(cols["queen.messages"], ", ")
		err = tx.QueryRow(ctx, `WITH ins AS (INSERT INTO queen.messages (`+list+`) SELECT `+list+`
                FROM jsonb_populate_recordset(NULL::queen.messages, $1::jsonb)
                ON CONFLICT DO NOTHING RETURNING 1)
            SELECT count(*) FROM ins`, string(rows)).Scan(&n)
		if err != nil {
			return tenantInputError("tenant import messages", "messages", err)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	return n, nil
}

// TenantImportPrune deletes the messages of partitionID, a partition of tenant's,
// whose id is not in keep, and returns how many it deleted.
func (s *Store) TenantImportPrune(ctx context.Context, tenant, partitionID string, keep []string) (int64, error) {
	if keep == nil {
		keep = []string{}
	}
	var n int64
	err := s.pool.QueryRow(ctx, `WITH d AS (DELETE FROM queen.messages m
            WHERE m.partition_id = $2::uuid AND m.partition_id IN `+sqlTenantPartitions+`
              AND NOT (m.id = ANY ($3::uuid[])) RETURNING 1)
        SELECT count(*) FROM d`, tenantPrefix(tenant), partitionID, keep).Scan(&n)
	if err != nil {
		return 0, tenantInputError("tenant import prune", "keep", err)
	}
	return n, nil
}

// TenantDrop deletes every row of tenant in this cell, in one transaction: its state
// (every table of TenantStateKeys), its messages and its analytics history. The
// answer counts the deleted rows by key ("messages", the state keys and "analytics").
// The tenant's fence stays.
func (s *Store) TenantDrop(ctx context.Context, tenant string) (map[string]int64, error) {
	out := make(map[string]int64, len(tenantTables)+2)
	args := []any{tenantPrefix(tenant), tenant}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, sql := range tenantAnalytics {
			tag, err := tx.Exec(ctx, sql+` AND $1::text IS NOT NULL AND $2::text IS NOT NULL`, args...)
			if err != nil {
				return fmt.Errorf("delete the tenant's analytics: %w", interpretError(err))
			}
			out["analytics"] += tag.RowsAffected()
		}
		for i, tt := range slices.Backward(tenantTables) {
			if i == 1 { // before the partitions: count the messages, not cascade them
				tag, err := tx.Exec(ctx, `DELETE FROM queen.messages t WHERE t.partition_id IN `+sqlTenantPartitions+
					` AND $1::text IS NOT NULL AND $2::text IS NOT NULL`, args...)
				if err != nil {
					return fmt.Errorf("delete the tenant's messages: %w", interpretError(err))
				}
				out["messages"] = tag.RowsAffected()
			}
			tag, err := tx.Exec(ctx, fmt.Sprintf(`DELETE FROM %s t WHERE %s AND $1::text IS NOT NULL AND $2::text IS NOT NULL`, tt.table, tt.owned), args...)
			if err != nil {
				return fmt.Errorf("delete the tenant's %s: %w", tt.key, interpretError(err))
			}
			out[tt.key] = tag.RowsAffected()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: tenant drop: %w", err)
	}
	return out, nil
}

// tenantInputError reads the error of a statement run on rows or keys a caller gave:
// a malformed value (a bad uuid or timestamp, a missing required column) is a
// *queue.ValidationError naming field, a reference to a row this cell lacks a
// *queue.ConflictError; anything else goes through interpretError. The database's
// text stays in the chain for the log, never in the client's message.
func tenantInputError(what, field string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "22"), pgErr.Code == "23502", pgErr.Code == "23514":
			return fmt.Errorf("%s: %w", what, errors.Join(
				queue.Invalid(field, "%s holds a malformed or incomplete value", field), err))
		case pgErr.Code == "23503":
			return fmt.Errorf("%s: %w", what, errors.Join(
				queue.Conflict("%s references rows this cell does not hold (import the messages first)", field), err))
		}
	}
	return fmt.Errorf("%s: %w", what, interpretError(err))
}
