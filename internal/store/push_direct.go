package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queenmq/queen/internal/queue"
)

// The direct push: the common push (every partition exists, no queue has a maxSize)
// as two plain statements sent in one round trip, without queen.push_q3, after one that
// sets their plan settings (sqlPushPlans). They run in one implicit transaction (pgx
// sends them with a single Sync), each with its own snapshot: the first takes the
// locks, so the second sees every head committed before them. A plpgsql call costs
// PostgreSQL more than the statements it runs (pgbench, durable, one message per push,
// 4 clients: about 1 000–1 300 pushes/s through push_q3 against 2 000–2 450 for these
// two statements).
//
// Anything else — a partition to create, a queue with a capacity — makes the first
// statement take no lock and the second insert nothing, and the push goes to
// queen.push_q3, which handles every case. Both statements keep push_q3's rules: the
// queue's registration lock in share mode and the partitions' ordering locks (sorted by
// id) before the timestamps are chosen; one timestamp per partition, never earlier than
// its head + 1µs; dedup by the unique index in item order; the head and the ready rows
// in the same transaction.

// sqlPushPlans is the direct push's first statement: the plan settings of its
// statements, for the rest of its transaction. A statement's cached plan is made under
// the settings in force when it is planned — on its first run on a connection, and
// again after every ANALYZE of a table it reads — and kept until then. Without them, a
// lock statement planned while queen.partitions was small kept a sequential scan of it
// after the queue grew, until the next ANALYZE (a push of 10 at 10 000 partitions read
// every partition: 104 pages, 0.8–1.0 ms instead of 0.08). Plans are generic: every
// statement is bounded by its keys, and a custom plan costs a planning per push.
const sqlPushPlans = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true),
       set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
       set_config('jit', 'off', true)`

// sqlPushLock resolves the pairs ($1 queues, $2 partitions) and, when every pair
// exists and no queue has a maxSize, takes the queues' registration locks in share
// mode and then the partitions' ordering locks, each set sorted by id, and hands the
// pairs' partition and queue ids to sqlPushInsert in two settings local to the
// transaction (a CASE, so that nothing is set unless every check passed: AND does not
// promise an order of evaluation). Otherwise it takes no lock and sets nothing, and
// sqlPushInsert stores nothing. It answers the partition ids, or NULL when the direct
// push does not apply (also when a partition was deleted after the pairs were read).
const sqlPushLock = `WITH k AS MATERIALIZED (
    -- Each pair's rows by key, in subqueries of their own (OFFSET 0 keeps them from
    -- being flattened into a join whose order and method the statistics choose): a
    -- plan made while the tables were small then still reads one index entry per pair
    -- when they have grown.
    SELECT x.ord, p.id AS pid, qq.id AS qid, qq.capped
    FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS x(qn, pn, ord)
    CROSS JOIN LATERAL (SELECT q.id, queen.enforced_option_q1(q.max_queue_size, q.queen_options, 'maxSize') > 0 AS capped
                        FROM queen.queues q WHERE q.name = x.qn OFFSET 0) qq
    CROSS JOIN LATERAL (SELECT pp.id FROM queen.partitions pp
                        WHERE pp.queue_id = qq.id AND pp.name = x.pn OFFSET 0) p
), ok AS MATERIALIZED (
    SELECT count(*) = cardinality($1::text[]) AND NOT coalesce(bool_or(k.capped), false) AS ok,
           array_agg(k.pid ORDER BY k.ord) AS pids, array_agg(k.qid ORDER BY k.ord) AS qids
    FROM k
), lq AS MATERIALIZED (
    SELECT pg_advisory_xact_lock_shared(queen.queue_consumers_key(q.qid))
    FROM (SELECT DISTINCT k.qid FROM k, ok WHERE ok.ok ORDER BY k.qid) q
), lp AS MATERIALIZED (
    SELECT pg_advisory_xact_lock(queen.partition_order_key(p.pid))
    FROM (SELECT k.pid FROM k, ok WHERE ok.ok AND (SELECT count(*) FROM lq) >= 0 ORDER BY k.pid) p
), lk AS MATERIALIZED (
    -- The partition rows in key-share mode, the lock the messages' partition check
    -- takes (which then skips the push's rows, named in queen.push_pids): taken here, a
    -- queue delete that got there first leaves a row out (the push goes to
    -- queen.push_q3), and one that comes later waits for the push's commit.
    -- One by one, by key, in id order.
    SELECT l.id
    FROM (SELECT DISTINCT k.pid FROM k, ok WHERE ok.ok AND (SELECT count(*) FROM lp) >= 0 ORDER BY k.pid) d
    CROSS JOIN LATERAL (SELECT p.id FROM queen.partitions p WHERE p.id = d.pid FOR KEY SHARE OF p) l
)
SELECT CASE WHEN ok.ok THEN
           CASE WHEN (SELECT count(*) FROM lk) = (SELECT count(DISTINCT k.pid) FROM k)
                     AND set_config('queen.push_pids', ok.pids::text, true) IS NOT NULL
                     AND set_config('queen.push_qids', ok.qids::text, true) IS NOT NULL
                THEN ok.pids::text[] END
       END
FROM ok`

// sqlPushInsert stores the items of a direct push into the partitions sqlPushLock
// locked (none when it set no ids) and answers the stored ones: item index and
// partition id. Parameters as queen.push_q3's, without the partition names.
const sqlPushInsert = `WITH k AS MATERIALIZED (
    SELECT x.ord, x.qn, x.pid, x.qid
    FROM ROWS FROM (unnest($1::text[]),
                    unnest(nullif(current_setting('queen.push_pids', true), '')::uuid[]),
                    unnest(nullif(current_setting('queen.push_qids', true), '')::uuid[]))
         WITH ORDINALITY AS x(qn, pid, qid, ord)
    WHERE x.pid IS NOT NULL
), clock AS MATERIALIZED (
    SELECT clock_timestamp() AS now
), stamps AS MATERIALIZED (
    -- The head of each partition by primary key, read under its lock.
    SELECT k.ord, k.qn, k.pid, k.qid,
           greatest(c.now, (SELECT pl.last_message_created_at + interval '1 microsecond'
                              FROM queen.partition_lookup pl
                             WHERE pl.partition_id = k.pid AND pl.queue_name = k.qn)) AS ts
    FROM k CROSS JOIN clock c
), ins AS (
    INSERT INTO queen.messages (id, transaction_id, partition_id, payload, trace_id,
                                created_at, is_encrypted, producer_sub, traceparent, tracestate)
    SELECT x.mid::uuid, x.txid, s.pid, x.payload, x.trace::uuid,
           s.ts, coalesce(x.enc, false), x.sub, x.tparent, x.tstate
    FROM ROWS FROM (unnest($2::integer[]), unnest($3::text[]), unnest($4::text[]),
                    jsonb_array_elements($5::text::jsonb), unnest($6::text[]), unnest($7::text[]),
                    unnest($8::boolean[]), unnest($9::text[]), unnest($10::text[]))
         WITH ORDINALITY AS x(pair, txid, mid, payload, trace, sub, enc, tparent, tstate, ord)
    JOIN stamps s ON s.ord = x.pair
    ORDER BY x.ord
    ON CONFLICT (partition_id, transaction_id) DO NOTHING
    RETURNING id, partition_id, created_at
), heads AS (
    SELECT DISTINCT ON (ins.partition_id) ins.partition_id, ins.id, ins.created_at
    FROM ins
    ORDER BY ins.partition_id, ins.created_at DESC, ins.id DESC
), lookup AS (
    INSERT INTO queen.partition_lookup AS pl
           (queue_name, partition_id, last_message_id, last_message_created_at, updated_at)
    SELECT s.qn, h.partition_id, h.id, h.created_at, now()
    FROM heads h JOIN stamps s ON s.pid = h.partition_id
    ON CONFLICT (queue_name, partition_id) DO UPDATE
       SET last_message_id = excluded.last_message_id,
           last_message_created_at = excluded.last_message_created_at,
           updated_at = excluded.updated_at
       WHERE (excluded.last_message_created_at, excluded.last_message_id)
             > (pl.last_message_created_at, pl.last_message_id)
    RETURNING 1
), ready AS (
    -- Ready in the order the push names the partitions, a microsecond apart.
    INSERT INTO queen.partition_ready (partition_id, consumer_group, queue_id, ready_at)
    SELECT h.partition_id, c.consumer_group, c.queue_id,
           k.now + make_interval(secs => (s.ord - 1) / 1e6)
    FROM heads h
    JOIN stamps s ON s.pid = h.partition_id
    CROSS JOIN clock k
    CROSS JOIN LATERAL (SELECT qc.consumer_group, qc.queue_id FROM queen.queue_consumers qc
                         WHERE qc.queue_id = s.qid OFFSET 0) c
    ON CONFLICT (partition_id, consumer_group) DO NOTHING
    RETURNING 1
)
SELECT (x.ord - 1)::integer, ins.partition_id::text
FROM unnest($4::text[]) WITH ORDINALITY AS x(mid, ord)
JOIN ins ON ins.id = x.mid::uuid`

// sqlPushOutcome answers the items of a direct push that were not stored: the id of the
// message stored under their (partition, transaction id), or nothing. Planned for each
// call's values by key ($1 partition ids, $2 transaction ids).
const sqlPushOutcome = `SELECT x.ord::integer - 1, m.id::text
FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS x(pid, txid, ord)
LEFT JOIN LATERAL (SELECT mm.id FROM queen.messages mm
                   WHERE mm.partition_id = x.pid AND mm.transaction_id COLLATE "C" = x.txid) m ON true`

// messageInsertDirect runs the direct push. ok is false when it does not apply (nothing
// was written: the caller runs queen.push_q3).
func (s *Store) messageInsertDirect(ctx context.Context, items []queue.PushItem, a *pushArgs) (results []queue.PushResult, ok bool, err error) {
	b, read := directPushBatch(a)
	br := s.pool.SendBatch(ctx, b)
	var pids []string
	stored := make([]bool, len(items))
	results, err = read(br, items, &pids, stored)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, false, interpretError(err)
	}
	if pids == nil {
		return nil, false, nil
	}
	for i := range stored {
		if !stored[i] {
			return results, true, s.pushOutcomes(ctx, items, a, pids, results, stored)
		}
	}
	return results, true, nil
}

// directPushReader reads the answers of a direct push's statements: the partition ids
// the locks were taken for (pids left nil when the push does not apply), and a result
// per stored item, marked in stored.
type directPushReader func(br pgx.BatchResults, items []queue.PushItem, pids *[]string, stored []bool) ([]queue.PushResult, error)

// directPushBatch returns the statements of the direct push of a, to be sent in one
// round trip and committed together, and the reader of their answers.
func directPushBatch(a *pushArgs) (*pgx.Batch, directPushReader) {
	b := &pgx.Batch{}
	b.Queue(sqlPushPlans)
	read := readDirectPush
	if len(a.queues) == 1 { // one partition: statements of its own (push_direct1.go)
		b.Queue(sqlPushLock1, a.queues[0], a.partitions[0])
		b.Queue(sqlPushInsert1, a.queues[0], a.txids, a.ids,
			a.payloads, a.traces, a.subs, a.encrypted, a.parents, a.states)
		read = readDirectPush1
	} else {
		b.Queue(sqlPushLock, a.queues, a.partitions)
		b.Queue(sqlPushInsert, a.queues, a.pair, a.txids, a.ids,
			a.payloads, a.traces, a.subs, a.encrypted, a.parents, a.states)
	}
	return b, func(br pgx.BatchResults, items []queue.PushItem, pids *[]string, stored []bool) ([]queue.PushResult, error) {
		if _, err := br.Exec(); err != nil { // the plan settings
			return nil, err
		}
		return read(br, items, pids, stored)
	}
}

// readDirectPush reads the answers of the direct push's two statements: the partition
// ids the locks were taken for (nil when the push does not apply), and a result per
// stored item, marked in stored.
func readDirectPush(br pgx.BatchResults, items []queue.PushItem, pids *[]string, stored []bool) ([]queue.PushResult, error) {
	n := len(items)
	if err := br.QueryRow().Scan(pids); err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	results := make([]queue.PushResult, n)
	var lastPID string
	var idx int
	var partID pgtype.DriverBytes
	for rows.Next() {
		if err := rows.Scan(&idx, &partID); err != nil {
			return nil, err
		}
		if idx < 0 || idx >= n || stored[idx] {
			return nil, fmt.Errorf("store: direct push returned item index %d of %d", idx, n)
		}
		if *pids == nil {
			return nil, fmt.Errorf("store: direct push stored item %d without its locks", idx)
		}
		it := &items[idx]
		results[idx] = queue.PushResult{
			Index: idx, Status: queue.StatusQueued, TransactionID: it.TransactionID, MessageID: it.MessageID,
			PartitionID: reuse(&lastPID, partID), TraceID: it.TraceID, Queue: it.Queue, Partition: it.Partition,
		}
		stored[idx] = true
	}
	return results, rows.Err()
}

// pushOutcomes answers the items of a committed direct push that were not stored: each
// is a duplicate of the message stored under its (partition, transaction id) — stored
// before, earlier in the same push, or by a concurrent push. A conflicting message
// deleted since (retention, a deleted queue) leaves the duplicate without a message id.
func (s *Store) pushOutcomes(ctx context.Context, items []queue.PushItem, a *pushArgs, pids []string,
	results []queue.PushResult, stored []bool) error {
	var qpids, txids []string
	var at []int
	for i := range items {
		if !stored[i] {
			qpids = append(qpids, pids[a.pair[i]-1])
			txids = append(txids, items[i].TransactionID)
			at = append(at, i)
		}
	}
	// Keyed plans for the rest of the implicit transaction of the two statements.
	b := &pgx.Batch{}
	b.Queue(`SELECT queen.keyed_plans_q1()`)
	b.Queue(sqlPushOutcome, qpids, txids)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return interpretError(err)
	}
	rows, err := br.Query()
	if err != nil {
		return interpretError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k int
		var id *string
		if err := rows.Scan(&k, &id); err != nil {
			return interpretError(err)
		}
		if k < 0 || k >= len(at) {
			return fmt.Errorf("store: push outcome returned index %d of %d", k, len(at))
		}
		i := at[k]
		it := &items[i]
		results[i] = queue.PushResult{
			Index: i, Status: queue.StatusDuplicate, TransactionID: it.TransactionID,
			PartitionID: pids[a.pair[i]-1], TraceID: it.TraceID, Queue: it.Queue, Partition: it.Partition,
		}
		if id != nil {
			results[i].MessageID = *id
		}
		stored[i] = true
	}
	if err := rows.Err(); err != nil {
		return interpretError(err)
	}
	for i := range stored {
		if !stored[i] {
			return fmt.Errorf("store: no outcome for push item %d", i)
		}
	}
	return nil
}
