package store

import (
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queenmq/queen/internal/queue"
)

// The direct push to one partition: the same two statements and rules as the direct
// push of several partitions (push_direct.go), written for the one-partition case most
// pushes are. With one partition there is nothing to join, sort or group: the lock
// statement is one row whose CASE takes the locks in order, and the insert stamps every
// item with the partition's one timestamp. PostgreSQL builds a plan node per join,
// sort and CTE scan on every execution, cached plan or not; the statements for several
// partitions spent about a fifth of a one-message push's PostgreSQL time starting
// them (docs/benchmarks.md).

// sqlPushLock1 resolves the pair ($1 queue, $2 partition) and, when it exists and the
// queue has no maxSize, takes the queue's registration lock in share mode, the
// partition's ordering lock and its row in key-share mode, in that order (a CASE
// evaluates its branches in order), and hands the partition and queue ids to
// sqlPushInsert1 in two settings local to the transaction. It answers the partition
// id, or NULL when the direct push does not apply (nothing locked or set; also when the
// partition was deleted after the pair was read).
const sqlPushLock1 = `SELECT (
    SELECT CASE
        WHEN k.capped THEN NULL
        WHEN (SELECT count(*) FROM (SELECT pg_advisory_xact_lock_shared(queen.queue_consumers_key(k.qid))) l) < 0 THEN NULL
        WHEN (SELECT count(*) FROM (SELECT pg_advisory_xact_lock(queen.partition_order_key(k.pid))) l) < 0 THEN NULL
        -- The lock the messages' partition check takes (which then skips the push's
        -- rows, named in queen.push_pid), taken here: a queue delete that got there
        -- first leaves no row (the push goes to queen.push_q3), one that comes later
        -- waits for the push's commit.
        WHEN NOT EXISTS (SELECT 1 FROM queen.partitions p WHERE p.id = k.pid FOR KEY SHARE) THEN NULL
        WHEN set_config('queen.push_pid', k.pid::text, true) IS NULL
          OR set_config('queen.push_qid', k.qid::text, true) IS NULL THEN NULL
        ELSE k.pid::text
    END
    FROM (SELECT p.id AS pid, qq.id AS qid,
                 queen.enforced_option_q1(qq.max_queue_size, qq.queen_options, 'maxSize') > 0 AS capped
          FROM queen.queues qq
          -- By key, whatever the statistics said when the statement was planned (see
          -- sqlPushLock).
          CROSS JOIN LATERAL (SELECT pp.id FROM queen.partitions pp
                              WHERE pp.queue_id = qq.id AND pp.name = $2::text OFFSET 0) p
          WHERE qq.name = $1::text) k)`

// sqlPushInsert1 stores the items of a one-partition direct push into the partition
// sqlPushLock1 locked (nothing when it set no ids) and answers the ids of the stored
// messages. $1 is the queue's name; the rest are queen.push_q3's item arrays.
const sqlPushInsert1 = `WITH s AS MATERIALIZED (
    -- The partition's head by primary key, read under its lock.
    SELECT k.pid, k.qid, c.now,
           greatest(c.now, (SELECT pl.last_message_created_at + interval '1 microsecond'
                              FROM queen.partition_lookup pl
                             WHERE pl.partition_id = k.pid AND pl.queue_name = $1::text)) AS ts
    FROM (SELECT nullif(current_setting('queen.push_pid', true), '')::uuid AS pid,
                 nullif(current_setting('queen.push_qid', true), '')::uuid AS qid) k,
         (SELECT clock_timestamp() AS now) c
    WHERE k.pid IS NOT NULL
), ins AS (
    INSERT INTO queen.messages (id, transaction_id, partition_id, payload, trace_id,
                                created_at, is_encrypted, producer_sub, traceparent, tracestate)
    SELECT x.mid::uuid, x.txid, s.pid, x.payload, x.trace::uuid,
           s.ts, coalesce(x.enc, false), x.sub, x.tparent, x.tstate
    FROM s, ROWS FROM (unnest($2::text[]), unnest($3::text[]),
                       jsonb_array_elements($4::text::jsonb), unnest($5::text[]), unnest($6::text[]),
                       unnest($7::boolean[]), unnest($8::text[]), unnest($9::text[]))
            WITH ORDINALITY AS x(txid, mid, payload, trace, sub, enc, tparent, tstate, ord)
    ORDER BY x.ord
    ON CONFLICT (partition_id, transaction_id) DO NOTHING
    RETURNING id
), head AS MATERIALIZED (
    -- One timestamp for the push: the head is its greatest id.
    SELECT ins.id FROM ins ORDER BY ins.id DESC LIMIT 1
), lookup AS (
    INSERT INTO queen.partition_lookup AS pl
           (queue_name, partition_id, last_message_id, last_message_created_at, updated_at)
    SELECT $1::text, s.pid, h.id, s.ts, now()
    FROM head h, s
    ON CONFLICT (queue_name, partition_id) DO UPDATE
       SET last_message_id = excluded.last_message_id,
           last_message_created_at = excluded.last_message_created_at,
           updated_at = excluded.updated_at
       WHERE (excluded.last_message_created_at, excluded.last_message_id)
             > (pl.last_message_created_at, pl.last_message_id)
    RETURNING 1
), ready AS (
    INSERT INTO queen.partition_ready (partition_id, consumer_group, queue_id, ready_at)
    SELECT s.pid, qc.consumer_group, qc.queue_id, s.now
    FROM s JOIN queen.queue_consumers qc ON qc.queue_id = s.qid
    WHERE EXISTS (SELECT 1 FROM head)
    ON CONFLICT (partition_id, consumer_group) DO NOTHING
    RETURNING 1
)
SELECT ins.id::text FROM ins`

// readDirectPush1 reads the answers of the one-partition direct push, as readDirectPush:
// the partition id the locks were taken for (pids nil when the push does not apply), and
// the id of each stored message, whose item it marks in stored.
func readDirectPush1(br pgx.BatchResults, items []queue.PushItem, pids *[]string, stored []bool) ([]queue.PushResult, error) {
	n := len(items)
	var pid *string
	if err := br.QueryRow().Scan(&pid); err != nil {
		return nil, err
	}
	if pid != nil {
		*pids = []string{*pid}
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	results := make([]queue.PushResult, n)
	var byID map[string]int
	var id pgtype.DriverBytes
	next := 0 // the messages come back in item order; byID is for any other
	for rows.Next() {
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		if pid == nil {
			return nil, fmt.Errorf("store: direct push stored message %s without its locks", id)
		}
		idx := -1
		for ; next < n; next++ {
			if !stored[next] && items[next].MessageID == string(id) {
				idx = next
				break
			}
		}
		if idx < 0 {
			if byID == nil {
				byID = make(map[string]int, n)
				for i := range items {
					if c, ok := queue.CanonicalUUID(items[i].MessageID); ok {
						byID[c] = i // PostgreSQL answers the canonical form
					}
				}
			}
			i, found := byID[string(id)]
			if !found || stored[i] {
				return nil, fmt.Errorf("store: direct push returned message %s, not one of its %d", id, n)
			}
			idx = i
		}
		it := &items[idx]
		results[idx] = queue.PushResult{
			Index: idx, Status: queue.StatusQueued, TransactionID: it.TransactionID, MessageID: it.MessageID,
			PartitionID: *pid, TraceID: it.TraceID, Queue: it.Queue, Partition: it.Partition,
		}
		stored[idx] = true
	}
	return results, rows.Err()
}
