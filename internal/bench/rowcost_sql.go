package bench

import (
	"fmt"
	"strings"
)

// The SQL of the -rowcost mode, all of it. The variant tables live in schema rowcost of
// the scratch database; they are copies of the broker's tables made from the catalog
// (rowcost.go), so they follow the product schema without repeating it here.

const rowCostSchema = "rowcost"

// Catalog reads of the table being copied ($1: its regclass text).
const (
	// sqlRowCostIndexes lists a table's indexes, the primary key first: name, whether
	// it is the primary key, whether it is unique, and pg_get_indexdef.
	sqlRowCostIndexes = `SELECT ic.relname, i.indisprimary, i.indisunique, pg_get_indexdef(i.indexrelid)
FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
WHERE i.indrelid = $1::regclass
ORDER BY i.indisprimary DESC, ic.relname`
	// sqlRowCostForeignKeys lists a table's foreign keys as constraint definitions.
	sqlRowCostForeignKeys = `SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
WHERE conrelid = $1::regclass AND contype = 'f' ORDER BY conname`
	// sqlRowCostRelOptions is a table's storage parameters (fillfactor, autovacuum),
	// which LIKE does not copy, as the text of a SET (…) list; "" when none.
	sqlRowCostRelOptions = `SELECT coalesce(array_to_string(reloptions, ', '), '') FROM pg_class WHERE oid = $1::regclass`
)

// rowCostInsertSQL is the raw insert of the insert ceiling's rows (sqlRawRowInsert),
// into table.
func rowCostInsertSQL(table string) string {
	const into = "INSERT INTO queen.messages"
	if !strings.HasPrefix(sqlRawRowInsert, into) {
		panic("bench: sqlRawRowInsert no longer starts with " + into)
	}
	return "INSERT INTO " + table + strings.TrimPrefix(sqlRawRowInsert, into)
}

// rowCostPushSQL is what push_q2 writes per push, in one statement into table and the
// copies rowcost.lookup, rowcost.ready and rowcost.consumers: the insert of the raw
// insert's rows ON CONFLICT DO NOTHING (dedup), the partition head upsert and the
// ready rows of the queue's registered groups (a conflict, once the partition has
// one), and it returns the number of rows inserted. $1…$4 are the raw insert's
// arrays (all rows of one partition), $5 the queue's name and $6 its id.
//
// With locks, it also does what push_q2's fast path does before the insert: the
// queue's registration lock in share mode and the partition's ordering lock (both
// transaction-scoped advisory locks), and created_at taken as the wall clock under
// them, never before the partition's head + 1 µs. Everything else takes created_at
// from statement_timestamp(), as the raw insert does. (In one statement the head is
// read from the statement's snapshot, taken before the lock: the cost is push_q2's,
// the ordering guarantee is not, which a measurement does not need.)
func rowCostPushSQL(table string, locks bool) string {
	lockCTE, createdAt := "", "statement_timestamp()"
	if locks {
		// OFFSET 0 and the lock columns in l's output keep the planner from dropping
		// the lock calls, whose results nothing else reads.
		lockCTE = `l AS MATERIALIZED (
    SELECT greatest(clock_timestamp(), (SELECT pl.last_message_created_at + interval '1 microsecond'
                                          FROM rowcost.lookup pl
                                         WHERE pl.partition_id = ($3::text[])[1]::uuid AND pl.queue_name = $5::text)) AS ts,
           k.registration, k.ordering
    FROM (SELECT pg_advisory_xact_lock_shared(queen.queue_consumers_key($6::uuid)) AS registration,
                 pg_advisory_xact_lock(queen.partition_order_key(($3::text[])[1]::uuid)) AS ordering
          OFFSET 0) k
), `
		createdAt = "(SELECT l.ts FROM l)"
	}
	return fmt.Sprintf(`WITH %[1]sins AS (
    INSERT INTO %[2]s (id, transaction_id, partition_id, payload, trace_id, created_at, is_encrypted, producer_sub)
    SELECT x.id::uuid, x.txid, x.pid::uuid, x.payload::jsonb, NULL, %[3]s, false, NULL
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS x(id, txid, pid, payload, ord)
    ORDER BY x.ord
    ON CONFLICT (partition_id, transaction_id) DO NOTHING
    RETURNING id, partition_id, created_at
), heads AS (
    SELECT DISTINCT ON (ins.partition_id) ins.partition_id, ins.id, ins.created_at
    FROM ins
    ORDER BY ins.partition_id, ins.created_at DESC, ins.id DESC
), lookup AS (
    INSERT INTO rowcost.lookup AS pl (queue_name, partition_id, last_message_id, last_message_created_at, updated_at)
    SELECT $5::text, h.partition_id, h.id, h.created_at, now() FROM heads h
    ON CONFLICT (queue_name, partition_id) DO UPDATE
       SET last_message_id = excluded.last_message_id,
           last_message_created_at = excluded.last_message_created_at,
           updated_at = excluded.updated_at
       WHERE (excluded.last_message_created_at, excluded.last_message_id)
             > (pl.last_message_created_at, pl.last_message_id)
    RETURNING 1
), ready AS (
    INSERT INTO rowcost.ready (partition_id, consumer_group, queue_id, ready_at)
    SELECT h.partition_id, c.consumer_group, c.queue_id, now()
    FROM heads h JOIN rowcost.consumers c ON c.queue_id = $6::uuid
    ON CONFLICT (partition_id, consumer_group) DO NOTHING
    RETURNING 1
)
SELECT count(*) FROM ins`, lockCTE, table, createdAt)
}

// sqlRowCostRegister registers consumer group $2 on queue $1 in the copy of
// queen.queue_consumers, so that the push variants write ready rows.
const sqlRowCostRegister = `INSERT INTO rowcost.consumers (queue_id, consumer_group) VALUES ($1::uuid, $2)`
