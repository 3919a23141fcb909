package bench

import "strings"

// The SQL of the segment prototype (queen-bench -segments): messages stored many to a
// row, a row per (partition, push batch), in a schema of its own (bench_seg) that the
// run creates and drops. Nothing of it is product code; it measures what such a
// layout would allow, beside the raw ceilings of today's one-row-per-message layout.
//
// The layout:
//
//	heads     one row per partition: the next offset to assign. A push updates it,
//	          so offsets are assigned under its row lock and a partition's segments
//	          commit in offset order: a reader never sees offset k+1 before k.
//	segments  one row per push batch: partition, first offset, count, created_at and
//	          the messages packed in the row (two packings, see segPacking).
//	cursors   one row per (partition, consumer group): the next offset to deliver and
//	          the lease fields. An ack is a cursor move.
//	ready     the partitions with pending work per group, least recently served
//	          first (as queen.partition_ready): the claim's index.
//
// The ready row of a partition comes and goes under the head row's lock: a push adds
// it after it locked the head, an ack or release that finds the partition drained
// drops it holding the head FOR SHARE. So a push never lands between "drained" and
// "dropped", and a pushed message is never left without a ready row.

// segPacking is how a segment row holds its messages. Both let a reader take part of
// a segment.
type segPacking string

const (
	// segArrays packs the messages in three parallel arrays (uuid[], text[], jsonb[]);
	// a reader slices them (ids[lo:hi]) and unnests the slices.
	segArrays segPacking = "arrays"
	// segJSONB packs them in one jsonb array of {"i":id,"t":transaction id,"p":payload}
	// objects, built by the client; a reader takes elements lo…hi.
	segJSONB segPacking = "jsonb"
)

func segPackings() []segPacking { return []segPacking{segArrays, segJSONB} }

// table is the segment table of the packing.
func (p segPacking) table() string { return "bench_seg.segments_" + string(p) }

// sql substitutes the packing's segment table for {segs} in q.
func (p segPacking) sql(q string) string { return strings.ReplaceAll(q, "{segs}", p.table()) }

// sqlSegSchema creates the prototype's tables (both packings); sqlSegDrop removes them.
const (
	sqlSegSchema = `CREATE SCHEMA bench_seg;
CREATE TABLE bench_seg.heads (
    partition_id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    next_offset  bigint NOT NULL DEFAULT 0
);
CREATE TABLE bench_seg.segments_arrays (
    partition_id uuid NOT NULL,
    first_offset bigint NOT NULL,
    n            int NOT NULL,
    created_at   timestamptz NOT NULL,
    ids          uuid[] NOT NULL,
    txids        text[] NOT NULL,
    payloads     jsonb[] NOT NULL,
    PRIMARY KEY (partition_id, first_offset)
);
CREATE TABLE bench_seg.segments_jsonb (
    partition_id uuid NOT NULL,
    first_offset bigint NOT NULL,
    n            int NOT NULL,
    created_at   timestamptz NOT NULL,
    doc          jsonb NOT NULL,
    PRIMARY KEY (partition_id, first_offset)
);
CREATE TABLE bench_seg.cursors (
    partition_id      uuid NOT NULL,
    consumer_group    varchar(255) NOT NULL,
    next_offset       bigint NOT NULL DEFAULT 0,
    lease_acquired_at timestamptz,
    lease_expires_at  timestamptz,
    worker_id         text,
    batch_size        int NOT NULL DEFAULT 0,
    total_consumed    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (partition_id, consumer_group)
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 50, autovacuum_vacuum_cost_delay = 0);
CREATE TABLE bench_seg.ready (
    partition_id   uuid NOT NULL,
    consumer_group varchar(255) NOT NULL,
    ready_at       timestamptz NOT NULL,
    PRIMARY KEY (partition_id, consumer_group)
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 50, autovacuum_vacuum_cost_delay = 0);
CREATE INDEX ready_claim ON bench_seg.ready (consumer_group, ready_at);`
	sqlSegDrop    = `DROP SCHEMA IF EXISTS bench_seg CASCADE`
	sqlSegAnalyze = `ANALYZE bench_seg.heads, bench_seg.segments_arrays, bench_seg.segments_jsonb, bench_seg.cursors, bench_seg.ready`
)

// sqlSegPartitions creates $1 partitions (head rows) and returns their ids;
// sqlSegCursors creates the cursor row of every partition for each group of $1.
const (
	sqlSegPartitions = `INSERT INTO bench_seg.heads (next_offset) SELECT 0 FROM generate_series(1, $1) RETURNING partition_id::text`
	sqlSegCursors    = `INSERT INTO bench_seg.cursors (partition_id, consumer_group)
SELECT h.partition_id, g FROM bench_seg.heads h, unnest($1::text[]) AS g`
)

// sqlSegPushHead is the start of both pushes: advance the head of partition $1 by $2
// under its row lock; the segment's first offset is the old head.
const sqlSegPushHead = `WITH h AS (
    UPDATE bench_seg.heads SET next_offset = next_offset + $2::int WHERE partition_id = $1::uuid
    RETURNING next_offset - $2::int AS first
), r AS (
    INSERT INTO bench_seg.ready (partition_id, consumer_group, ready_at)
    SELECT c.partition_id, c.consumer_group, now() FROM h, bench_seg.cursors c WHERE c.partition_id = $1::uuid
    ON CONFLICT DO NOTHING
)`

// sqlSegPushArrays and sqlSegPushJSONB are the push: one statement (autocommit) that
// advances the head, appends the segment and marks the partition ready for every
// group (a ready row already there, due or parked at a lease, stays as it is). The
// ready insert reads h, so it runs once the head is locked. They return the first
// offset (no row: no such partition).
const (
	sqlSegPushArrays = sqlSegPushHead + `, s AS (
    INSERT INTO bench_seg.segments_arrays (partition_id, first_offset, n, created_at, ids, txids, payloads)
    SELECT $1::uuid, h.first, $2::int, statement_timestamp(), $3::text[]::uuid[], $4::text[], $5::text[]::jsonb[] FROM h
)
SELECT first FROM h`
	sqlSegPushJSONB = sqlSegPushHead + `, s AS (
    INSERT INTO bench_seg.segments_jsonb (partition_id, first_offset, n, created_at, doc)
    SELECT $1::uuid, h.first, $2::int, statement_timestamp(), $3::text::jsonb FROM h
)
SELECT first FROM h`
)

// sqlSegChoose chooses the partition to serve for group $1: its first due ready row,
// least recently served first, FOR UPDATE SKIP LOCKED, with the cursor's offset.
const sqlSegChoose = `SELECT r.partition_id AS partition, cu.next_offset AS off
FROM bench_seg.ready r
JOIN bench_seg.cursors cu ON cu.partition_id = r.partition_id AND cu.consumer_group = r.consumer_group
WHERE r.consumer_group = $1 AND r.ready_at <= now()
ORDER BY r.ready_at
LIMIT 1
FOR UPDATE OF r SKIP LOCKED`

// sqlSegSegments selects the segments holding offsets [c.off, c.off + $2): the one
// that holds c.off (the last starting at or before it: an index scan backwards) and
// those starting inside the range. lo and hi are the 1-based positions to take.
const sqlSegSegments = `SELECT s.*, greatest(1, c.off - s.first_offset + 1)::int AS lo,
       least(s.n::bigint, c.off + $2::int - s.first_offset)::int AS hi
    FROM {segs} s
    WHERE s.partition_id = c.partition
      AND s.first_offset >= coalesce((SELECT max(x.first_offset) FROM {segs} x
                                      WHERE x.partition_id = c.partition AND x.first_offset <= c.off), c.off)
      AND s.first_offset < c.off + $2::int`

// sqlSegReadArrays and sqlSegReadJSONB read the next $2 messages of the partition c
// chose, by offset, across segments or out of part of one: (off, id, txid, payload).
const (
	sqlSegReadArrays = `SELECT s.first_offset + s.lo - 1 + u.ord - 1 AS off, u.id::text AS id, u.txid, u.payload
    FROM (` + sqlSegSegments + `) s
    CROSS JOIN LATERAL unnest(s.ids[s.lo:s.hi], s.txids[s.lo:s.hi], s.payloads[s.lo:s.hi])
         WITH ORDINALITY AS u(id, txid, payload, ord)`
	sqlSegReadJSONB = `SELECT s.first_offset + e.ord - 1 AS off, e.v->>'i' AS id, e.v->>'t' AS txid, e.v->'p' AS payload
    FROM (` + sqlSegSegments + `) s
    CROSS JOIN LATERAL jsonb_array_elements(s.doc) WITH ORDINALITY AS e(v, ord)
    WHERE e.ord BETWEEN s.lo AND s.hi`
)

// sqlSegClaim is transaction 1 of the prototype's two-commit cycle: choose and lock a
// partition of group $1, lease it to worker $3 for batch $2, park its ready row until
// the lease ends, read the next $2 messages in offset order; commit. One row of
// NULL messages when the partition holds nothing past the cursor; no row when
// nothing is due.
func sqlSegClaim(p segPacking) string {
	read := sqlSegReadArrays
	if p == segJSONB {
		read = sqlSegReadJSONB
	}
	return p.sql(`WITH c AS (` + sqlSegChoose + `),
lease AS (
    UPDATE bench_seg.cursors cu
       SET lease_acquired_at = now(), lease_expires_at = now() + interval '60 seconds', worker_id = $3, batch_size = $2::int
      FROM c WHERE cu.partition_id = c.partition AND cu.consumer_group = $1
), park AS (
    UPDATE bench_seg.ready r SET ready_at = now() + interval '60 seconds'
      FROM c WHERE r.partition_id = c.partition AND r.consumer_group = $1
)
SELECT c.partition::text, m.off, m.id, m.txid, m.payload::text
FROM c LEFT JOIN LATERAL (` + read + `) m ON true
ORDER BY m.off`)
}

// sqlSegAck is transaction 2 (the ack): move the cursor of partition $1, group $2 to
// offset $3 (the next to deliver) and clear the lease of worker $4; then the ready
// row goes to the end of the line, or goes away when the cursor reached the head
// (read holding the head FOR SHARE, so a push of this moment either committed before,
// and is seen, or waits and adds its ready row after). A cursor whose lease is no
// longer $4's is left alone (no row returned).
const sqlSegAck = `WITH a AS (
    UPDATE bench_seg.cursors
       SET next_offset = $3, total_consumed = total_consumed + ($3 - next_offset),
           lease_acquired_at = NULL, lease_expires_at = NULL, worker_id = NULL, batch_size = 0
     WHERE partition_id = $1::uuid AND consumer_group = $2 AND worker_id = $4
    RETURNING partition_id, consumer_group, next_offset
` + sqlSegSettle

// sqlSegRelease clears the lease of worker $3 on partition $1, group $2 without
// moving the cursor (a claim that read nothing) and handles the ready row as the ack
// does.
const sqlSegRelease = `WITH a AS (
    UPDATE bench_seg.cursors
       SET lease_acquired_at = NULL, lease_expires_at = NULL, worker_id = NULL, batch_size = 0
     WHERE partition_id = $1::uuid AND consumer_group = $2 AND worker_id = $3
    RETURNING partition_id, consumer_group, next_offset
` + sqlSegSettle

// sqlSegSettle follows the cursor update a of sqlSegAck and sqlSegRelease (partition
// $1): the ready row goes to the end of the line while the partition has more, and
// goes when the cursor reached the head (read FOR SHARE, so no push slips between).
const sqlSegSettle = `), h AS (
    SELECT hd.next_offset FROM bench_seg.heads hd WHERE hd.partition_id = $1::uuid FOR SHARE
), more AS (
    UPDATE bench_seg.ready r SET ready_at = now()
      FROM a, h WHERE r.partition_id = a.partition_id AND r.consumer_group = a.consumer_group
                  AND a.next_offset < h.next_offset
), drained AS (
    DELETE FROM bench_seg.ready r
     USING a, h WHERE r.partition_id = a.partition_id AND r.consumer_group = a.consumer_group
                  AND a.next_offset >= h.next_offset
)
SELECT a.next_offset FROM a`

// sqlTodayPushReady is the producer of today's layout in the mixed ceiling: the raw
// insert (sqlRawInsert) plus the ready row of group $5 in queue $6 for the partition,
// so that the raw two-commit cycle finds what was pushed (the raw insert alone leaves
// no ready row; the broker's push adds one).
const sqlTodayPushReady = `WITH ins AS (` + sqlRawInsert + ` RETURNING partition_id)
INSERT INTO queen.partition_ready (partition_id, consumer_group, queue_id, ready_at)
SELECT DISTINCT ins.partition_id, $5::text, $6::uuid, now() FROM ins
ON CONFLICT DO NOTHING`
