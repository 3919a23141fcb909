package bench

// The SQL of the raw ceilings, all of it. The ceilings run against the broker's own
// tables (queen.messages with its indexes and partition check, queen.partition_lookup,
// queen.partition_consumers) in a queue the broker never touches, so a raw row costs
// PostgreSQL what a pushed row costs it. What the raw statements leave out is exactly
// what the broker adds on top: HTTP and JSON, dedup and queue/partition upserts, the
// per-partition ordering lock, the checks of the ack, and plpgsql.
//
// Choosing the partition to serve is one constant, sqlRawChoosePartition, shared by
// both claim cycles. It takes the first row of the broker's own index of partitions
// with pending work (queen.partition_ready, least recently served first), so the
// ceiling chooses the way the broker does; the cycles keep those rows as the broker
// does (parked at the lease, back at the end when served, gone when drained).

// sqlRawRowInsert is the multi-row insert of the rows: text arrays cast in SQL, like
// the push's, one timestamp per statement, like the push's per partition.
const sqlRawRowInsert = `INSERT INTO queen.messages
       (id, transaction_id, partition_id, payload, trace_id, created_at, is_encrypted, producer_sub)
SELECT x.id::uuid, x.txid, x.pid::uuid, x.payload::jsonb, NULL, statement_timestamp(), false, NULL
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS x(id, txid, pid, payload)`

// sqlRawInsert is the insert ceiling's statement: sqlRawRowInsert, after taking its
// partitions' rows in key-share mode once each and naming them in the transaction's
// queen.push_pids, as the direct push's lock statement does. The partition check of
// queen.messages (schema 001_tables.sql) then skips its rows, as it skips a direct
// push's: the rule costs the ceiling what it costs a push, once per partition and
// statement, not once per row.
const sqlRawInsert = `WITH held AS MATERIALIZED (
    SELECT set_config('queen.push_pids', coalesce(array_agg(p.id)::text, ''), true) AS pids
    FROM (SELECT DISTINCT x.pid::uuid AS id FROM unnest($3::text[]) AS x(pid)) d
    CROSS JOIN LATERAL (SELECT pp.id FROM queen.partitions pp WHERE pp.id = d.id FOR KEY SHARE) p
)
` + sqlRawRowInsert + `
CROSS JOIN held`

// sqlRawChoosePartition chooses the partition to serve: the ready row of consumer
// group $2 in queue $1 that is due (not parked at a live lease) and was least
// recently served, locked FOR UPDATE SKIP LOCKED (rows that other consumers hold are
// skipped, never waited for), with its cursor row. It yields at most one row:
//
//	id         the cursor row (queen.partition_consumers.id)
//	partition  its partition id
//	ts, mid    the cursor: the (created_at, id) of the last message consumed, or
//	           ('-infinity', the zero uuid) before the first
//
// The ready row parked at the lease is what lets the two-commit cycle commit between
// claim and advance.
const sqlRawChoosePartition = `SELECT pc.id, pc.partition_id AS partition,
       coalesce(pc.last_consumed_created_at, '-infinity'::timestamptz) AS ts, pc.last_consumed_id AS mid
FROM queen.partition_ready r
JOIN queen.partition_consumers pc ON pc.partition_id = r.partition_id AND pc.consumer_group = $2
WHERE r.queue_id = (SELECT q.id FROM queen.queues q WHERE q.name = $1) AND r.consumer_group = $2
  AND r.ready_at <= now()
ORDER BY r.ready_at
LIMIT 1
FOR UPDATE OF r SKIP LOCKED`

// sqlRawReadBatch is the read of a claimed partition's next batch ($3 messages) in
// (created_at, id) order after the cursor of the row c chosen above. LATERAL …
// ORDER BY … LIMIT makes it an ordered index scan whatever the statistics say.
const sqlRawReadBatch = `SELECT mm.id, mm.transaction_id, mm.payload, mm.created_at
    FROM queen.messages mm
    WHERE mm.partition_id = c.partition AND (mm.created_at, mm.id) > (c.ts, c.mid)
    ORDER BY mm.created_at, mm.id
    LIMIT $3::int`

// sqlRawClaim1 is the one-statement cycle (the reference row raw_claim1_b100): one
// statement, one round trip, one transaction, that chooses and locks a partition,
// reads its next batch and advances the cursor past it (a drained partition's ready
// row goes). It has no lease: the lock is held until the statement commits, so it
// needs no second commit.
const sqlRawClaim1 = `WITH c AS (` + sqlRawChoosePartition + `),
m AS (
    SELECT n.* FROM c CROSS JOIN LATERAL (` + sqlRawReadBatch + `) n
), adv AS (
    UPDATE queen.partition_consumers pc
       SET last_consumed_created_at = l.created_at, last_consumed_id = l.id, last_consumed_at = now(),
           total_messages_consumed = pc.total_messages_consumed + 1
      FROM c, (SELECT created_at, id FROM m ORDER BY created_at DESC, id DESC LIMIT 1) l
     WHERE pc.id = c.id
), served AS (
    UPDATE queen.partition_ready r SET ready_at = now()
      FROM c WHERE r.partition_id = c.partition AND r.consumer_group = $2 AND EXISTS (SELECT 1 FROM m)
), drained AS (
    DELETE FROM queen.partition_ready r
     USING c WHERE r.partition_id = c.partition AND r.consumer_group = $2 AND NOT EXISTS (SELECT 1 FROM m)
)
SELECT m.id::text, m.transaction_id, m.payload FROM m`

// sqlRawClaimLease is transaction 1 of the two-commit cycle, the ceiling of every
// pop+ack case: choose and lock a partition, take its lease for worker $4 (the lease
// fields pop_q1 sets), read the next batch, commit (autocommit: one round trip). The
// lease, not the row lock, keeps other consumers off the partition until the
// advance. Every row carries the cursor row's id; a claimed partition without a
// message (it cannot happen here: the choice requires one) yields one row of NULLs.
const sqlRawClaimLease = `WITH c AS (` + sqlRawChoosePartition + `),
lease AS (
    UPDATE queen.partition_consumers pc
       SET lease_acquired_at = now(), lease_expires_at = now() + interval '60 seconds',
           worker_id = $4, batch_size = $3::int, acked_count = 0
      FROM c
     WHERE pc.id = c.id
), park AS (
    UPDATE queen.partition_ready r SET ready_at = now() + interval '60 seconds'
      FROM c WHERE r.partition_id = c.partition AND r.consumer_group = $2
)
SELECT c.id::text, n.id::text, n.transaction_id, n.payload, n.created_at
FROM c LEFT JOIN LATERAL (` + sqlRawReadBatch + `) n ON true`

// sqlRawAdvance is transaction 2 of the two-commit cycle (the ack): advance cursor
// row $1 to the last message read, ($2, $3), count $4 messages, clear the lease of
// worker $5, put its ready row at the end of the line, commit. A row whose lease is no
// longer $5's is left alone (0 rows affected).
const sqlRawAdvance = `WITH a AS (
    UPDATE queen.partition_consumers
       SET last_consumed_created_at = $2, last_consumed_id = $3::uuid, last_consumed_at = now(),
           lease_acquired_at = NULL, lease_expires_at = NULL, worker_id = NULL, batch_size = 0, acked_count = 0,
           total_messages_consumed = total_messages_consumed + $4, total_batches_consumed = total_batches_consumed + 1
     WHERE id = $1::uuid AND worker_id = $5
    RETURNING partition_id, consumer_group
)
UPDATE queen.partition_ready r SET ready_at = now()
  FROM a WHERE r.partition_id = a.partition_id AND r.consumer_group = a.consumer_group`

// sqlRawRelease clears the lease of cursor row $1 held by worker $2 without moving
// the cursor (a claim that read nothing: the partition is drained) and drops its
// ready row.
const sqlRawRelease = `WITH a AS (
    UPDATE queen.partition_consumers
       SET lease_acquired_at = NULL, lease_expires_at = NULL, worker_id = NULL, batch_size = 0, acked_count = 0
     WHERE id = $1::uuid AND worker_id = $2
    RETURNING partition_id, consumer_group
)
DELETE FROM queen.partition_ready r USING a
 WHERE r.partition_id = a.partition_id AND r.consumer_group = a.consumer_group`

// sqlRawQueue and sqlRawPartitions create a queue with partitions p0…p($2-1), the
// way push_q2 would.
const (
	sqlRawQueue      = `INSERT INTO queen.queues (name, retry_delay, ttl) VALUES ($1, 0, 0) RETURNING id::text`
	sqlRawPartitions = `INSERT INTO queen.partitions (queue_id, name)
SELECT $1::uuid, 'p' || g FROM generate_series(0, $2 - 1) AS g RETURNING id::text, name`
)

// sqlRawFillHeads records each partition's newest message of queue $1 in
// partition_lookup, as push_q2 does on every push (the raw insert does not: that
// upsert is part of what the broker adds). An upsert: the broker's lookup reconcile
// job may have found the raw partitions first (messages without a head are what it
// repairs).
const sqlRawFillHeads = `INSERT INTO queen.partition_lookup (queue_name, partition_id, last_message_id, last_message_created_at)
SELECT DISTINCT ON (m.partition_id) $1::text, m.partition_id, m.id, m.created_at
FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
JOIN queen.queues q ON q.id = p.queue_id
WHERE q.name = $1::text
ORDER BY m.partition_id, m.created_at DESC, m.id DESC
ON CONFLICT (queue_name, partition_id) DO UPDATE
   SET last_message_id = EXCLUDED.last_message_id, last_message_created_at = EXCLUDED.last_message_created_at`

// sqlRawFillCursors creates a cursor row per partition of queue $1 and group of $2,
// as the broker's first pop of each would, and sqlRawFillReady the ready row of each
// partition with messages, as the broker's push and registration would.
const (
	sqlRawFillCursors = `INSERT INTO queen.partition_consumers (partition_id, consumer_group)
SELECT p.id, g FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id, unnest($2::text[]) AS g
WHERE q.name = $1`
	sqlRawFillReady = `INSERT INTO queen.partition_ready (partition_id, consumer_group, queue_id, ready_at)
SELECT pl.partition_id, g, q.id, now() FROM queen.partition_lookup pl JOIN queen.queues q ON q.name = pl.queue_name,
       unnest($2::text[]) AS g
WHERE pl.queue_name = $1`
)
