package bench

import (
	"context"
	"fmt"

	"github.com/queenmq/queen/internal/queue"
)

// The raw ceilings run against the broker's own tables (queen.messages with its
// indexes and foreign key, queen.partition_lookup, queen.partition_consumers) in a
// queue the broker never touches, so a raw row costs PostgreSQL what a pushed row
// costs it. What the raw statements leave out is exactly what the broker adds on top:
// HTTP and JSON, dedup and queue/partition upserts, the per-partition ordering lock,
// leases, and a second round trip (the ack).

// sqlRawInsert is the multi-row insert of the insert ceiling: text arrays cast in SQL,
// like push_q2's, one timestamp per statement, like push_q2's per partition.
const sqlRawInsert = `INSERT INTO queen.messages
       (id, transaction_id, partition_id, payload, trace_id, created_at, is_encrypted, producer_sub)
SELECT x.id::uuid, x.txid, x.pid::uuid, x.payload::jsonb, NULL, statement_timestamp(), false, NULL
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS x(id, txid, pid, payload)`

// sqlRawClaim is the claim ceiling: one statement (one round trip, one transaction)
// that claims the least recently served partition with pending messages for the
// group (locking its cursor row, skipping rows other consumers hold), reads the next
// batch in (created_at, id) order and advances the cursor past it. pop_q1 does the
// same work plus leases, and the ack is a second round trip.
const sqlRawClaim = `WITH c AS (
    SELECT pc.id, pc.partition_id,
           coalesce(pc.last_consumed_created_at, '-infinity'::timestamptz) AS ts, pc.last_consumed_id AS mid
    FROM queen.partition_lookup pl
    JOIN queen.partition_consumers pc ON pc.partition_id = pl.partition_id AND pc.consumer_group = $2
    WHERE pl.queue_name = $1
      AND (pc.last_consumed_created_at IS NULL
           OR (pl.last_message_created_at, pl.last_message_id) > (pc.last_consumed_created_at, pc.last_consumed_id))
    ORDER BY pc.last_consumed_at ASC NULLS FIRST
    LIMIT 1
    FOR UPDATE OF pc SKIP LOCKED
), m AS (
    SELECT n.id, n.transaction_id, n.payload, n.created_at
    FROM c CROSS JOIN LATERAL (
        SELECT mm.id, mm.transaction_id, mm.payload, mm.created_at
        FROM queen.messages mm
        WHERE mm.partition_id = c.partition_id AND (mm.created_at, mm.id) > (c.ts, c.mid)
        ORDER BY mm.created_at, mm.id
        LIMIT $3) n
), adv AS (
    UPDATE queen.partition_consumers pc
       SET last_consumed_created_at = l.created_at, last_consumed_id = l.id, last_consumed_at = now(),
           total_messages_consumed = pc.total_messages_consumed + 1
      FROM c, (SELECT created_at, id FROM m ORDER BY created_at DESC, id DESC LIMIT 1) l
     WHERE pc.id = c.id
)
SELECT m.id::text, m.transaction_id, m.payload FROM m`

// rawQueue creates a queue with partitions named p0…p(n-1), the way push_q2 would,
// and returns the partition ids in name order.
func (d *database) rawQueue(ctx context.Context, name string, n int) ([]string, error) {
	var qid string
	err := d.pool.QueryRow(ctx, `INSERT INTO queen.queues (name, retry_delay, ttl) VALUES ($1, 0, 0) RETURNING id::text`,
		name).Scan(&qid)
	if err != nil {
		return nil, fmt.Errorf("create raw queue: %w", err)
	}
	rows, err := d.pool.Query(ctx, `INSERT INTO queen.partitions (queue_id, name)
		SELECT $1::uuid, 'p' || g FROM generate_series(0, $2 - 1) AS g RETURNING id::text, name`, qid, n)
	if err != nil {
		return nil, fmt.Errorf("create raw partitions: %w", err)
	}
	defer rows.Close()
	ids := make([]string, n)
	for rows.Next() {
		var id, pname string
		if err := rows.Scan(&id, &pname); err != nil {
			return nil, err
		}
		var i int
		if _, err := fmt.Sscanf(pname, "p%d", &i); err != nil || i < 0 || i >= n {
			return nil, fmt.Errorf("unexpected raw partition %q", pname)
		}
		ids[i] = id
	}
	return ids, rows.Err()
}

// rawInserter builds the arrays of one multi-row insert.
type rawInserter struct {
	ids     *queue.IDGenerator
	payload string
	msgIDs  []string
	txids   []string
	pids    []string
	bodies  []string
}

func newRawInserter(ids *queue.IDGenerator, payload string, batch int) *rawInserter {
	ri := &rawInserter{ids: ids, payload: payload, msgIDs: make([]string, batch), txids: make([]string, batch),
		pids: make([]string, batch), bodies: make([]string, batch)}
	for i := range ri.bodies {
		ri.bodies[i] = payload
	}
	return ri
}

// insert stores one batch; pid(i) gives the partition id of row i.
func (ri *rawInserter) insert(ctx context.Context, d *database, pid func(i int) string) error {
	for i := range ri.msgIDs {
		ri.msgIDs[i], ri.txids[i], ri.pids[i] = ri.ids.New(), ri.ids.New(), pid(i)
	}
	_, err := d.pool.Exec(ctx, sqlRawInsert, ri.msgIDs, ri.txids, ri.pids, ri.bodies)
	return err
}

// rawFill stores total messages in the partitions pids, message i in pids[i % len],
// in batches of 1000, then records the partition heads and a cursor per group, as the
// broker's push and first pop would.
func (d *database) rawFill(ctx context.Context, queueName string, pids []string, total int, payload string, groups []string) error {
	ids := queue.NewIDGenerator()
	const batch = 1000
	for off := 0; off < total; off += batch {
		n := min(batch, total-off)
		ri := newRawInserter(ids, payload, n)
		if err := ri.insert(ctx, d, func(i int) string { return pids[(off+i)%len(pids)] }); err != nil {
			return fmt.Errorf("raw fill: %w", err)
		}
	}
	_, err := d.pool.Exec(ctx, `INSERT INTO queen.partition_lookup (queue_name, partition_id, last_message_id, last_message_created_at)
		SELECT DISTINCT ON (m.partition_id) $1::text, m.partition_id, m.id, m.created_at
		FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
		JOIN queen.queues q ON q.id = p.queue_id
		WHERE q.name = $1::text
		ORDER BY m.partition_id, m.created_at DESC, m.id DESC`, queueName)
	if err != nil {
		return fmt.Errorf("raw fill lookup: %w", err)
	}
	_, err = d.pool.Exec(ctx, `INSERT INTO queen.partition_consumers (partition_id, consumer_group)
		SELECT p.id, g FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id, unnest($2::text[]) AS g
		WHERE q.name = $1`, queueName, groups)
	if err != nil {
		return fmt.Errorf("raw fill cursors: %w", err)
	}
	return d.analyze(ctx)
}

// rawClaimOp returns the claim-cycle operation for worker w, consuming for
// groups[w % len(groups)].
func (d *database) rawClaimOp(queueName string, groups []string, batch int) op {
	return func(ctx context.Context, w int) (int, error) {
		rows, err := d.pool.Query(ctx, sqlRawClaim, queueName, groups[w%len(groups)], batch)
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		n := 0
		var id, txid string
		var payload []byte
		for rows.Next() {
			if err := rows.Scan(&id, &txid, &payload); err != nil {
				return 0, err
			}
			n++
		}
		return n, rows.Err()
	}
}
