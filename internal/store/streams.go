package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

const sqlStreamRegister = `SELECT o_id::text, o_fresh, o_reset, o_mismatch, o_stored_hash
FROM queen_streams.register_q1($1, $2, $3, $4, $5)`

// StreamRegister registers or resumes a stream query by name (see
// queen_streams.register_q1). A hash mismatch without reset is reported in the result
// (Mismatch), not as an error.
func (s *Store) StreamRegister(ctx context.Context, r queue.StreamRegistration) (queue.StreamRegistered, error) {
	out := queue.StreamRegistered{Name: r.Name, ConfigHash: r.ConfigHash}
	var sink *string
	if r.SinkQueue != "" {
		sink = &r.SinkQueue
	}
	err := s.pool.QueryRow(ctx, sqlStreamRegister, r.Name, r.SourceQueue, sink, r.ConfigHash, r.Reset).
		Scan(&out.QueryID, &out.Fresh, &out.Reset, &out.Mismatch, &out.StoredHash)
	return out, interpretError(err)
}

const (
	sqlStreamCycleBegin = `SELECT o_found, coalesce(o_source, '')
FROM queen_streams.cycle_begin_q1($1::uuid, $2::uuid, $3::text[], $4::text[], $5::text)`
	sqlStreamStateApply = `SELECT o_upserted, o_deleted FROM queen_streams.state_apply_q1($1::uuid, $2::uuid, $3::text[], $4::text[], $5::text[])`
	sqlStreamCycleAck   = `SELECT o_success, coalesce(o_error, ''), o_lease_released, o_dlq, o_dead
FROM queen_streams.cycle_ack_q1($1, $2, $3::uuid, $4, $5, $6, $7, $8, $9)`
)

// StreamCycleRun applies one cycle (validated, message ids assigned, payloads sealed)
// in one transaction: the shard's cycle lock and every push and ack lock first, then
// the source ack, the state ops and the sink pushes. The first failing part rolls
// everything back and is reported in the result (Success false, Error); only
// infrastructure failures are returned as errors.
func (s *Store) StreamCycleRun(ctx context.Context, c queue.StreamCycle) (queue.StreamCycleResult, error) {
	res := queue.StreamCycleResult{QueryID: c.QueryID, PartitionID: c.PartitionID}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return res, interpretError(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	pushQueues := make([]string, len(c.Push))
	pushPartitions := make([]string, len(c.Push))
	for i, it := range c.Push {
		pushQueues[i], pushPartitions[i] = it.Queue, it.Partition
	}
	var ackGroup *string
	if c.Ack != nil {
		ackGroup = &c.ConsumerGroup
	}
	var found bool
	if err := tx.QueryRow(ctx, sqlStreamCycleBegin, c.QueryID, c.PartitionID, pushQueues, pushPartitions, ackGroup).
		Scan(&found, &res.SourceQueue); err != nil {
		return res, interpretError(err)
	}
	if !found {
		res.Error = fmt.Sprintf("stream query %s not found (register it with POST /streams/v1/queries)", c.QueryID)
		return res, nil
	}
	// The ack first: a cycle it refuses (a stale lease, a retried cycle) is rolled back
	// before its state ops and sink pushes have cost anything.
	var ack *queue.StreamAckResult
	if a := c.Ack; a != nil {
		ack = &queue.StreamAckResult{Count: a.Count}
		var errText string
		if err := tx.QueryRow(ctx, sqlStreamCycleAck, res.SourceQueue, a.TransactionID, c.PartitionID, c.ConsumerGroup,
			a.Status, a.LeaseID, a.Count, a.Error, c.ReleaseLease).Scan(&ack.Success, &errText, &ack.LeaseReleased, &ack.DLQ, &ack.DeadLettered); err != nil {
			return res, interpretError(err)
		}
		if !ack.Success {
			res.Error = "ack failed: " + errText
			return res, nil
		}
	}
	if err := streamStateApply(ctx, tx, c); err != nil {
		return res, err
	}
	if len(c.Push) > 0 {
		pushed, err := messageInsertBatch(ctx, tx, c.Push, newPushArgs(c.Push))
		if err != nil {
			return res, err
		}
		for _, p := range pushed {
			if p.Status == "full" {
				res.Error = fmt.Sprintf("sink queue %q is full: maxSize reached", p.Queue)
				return res, nil
			}
		}
		res.Push = pushed
	}
	if err := tx.Commit(ctx); err != nil {
		return res, interpretError(err)
	}
	res.Success = true
	res.Ack = ack
	res.StateOpsApplied = len(c.StateOps)
	return res, nil
}

// StreamSourceQueue returns the source queue of the stream query queryID (a UUID),
// "" when there is no such query.
func (s *Store) StreamSourceQueue(ctx context.Context, queryID string) (string, error) {
	var source string
	err := s.pool.QueryRow(ctx, `SELECT source_queue FROM queen_streams.queries WHERE id = $1::uuid`, queryID).Scan(&source)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return source, interpretError(err)
}

func streamStateApply(ctx context.Context, tx pgx.Tx, c queue.StreamCycle) error {
	n := len(c.StateOps)
	if n == 0 {
		return nil
	}
	types := make([]string, n)
	keys := make([]string, n)
	values := make([]*string, n)
	for i, op := range c.StateOps {
		types[i], keys[i] = op.Type, op.Key
		if op.Type == queue.StateOpUpsert {
			v := string(op.Value)
			values[i] = &v
		}
	}
	var upserted, deleted int64
	err := tx.QueryRow(ctx, sqlStreamStateApply, c.QueryID, c.PartitionID, types, keys, values).Scan(&upserted, &deleted)
	return interpretError(err)
}

const sqlStreamStateGet = `SELECT s.key, s.value::text, s.updated_at
FROM queen_streams.state s
WHERE s.query_id = $1::uuid AND s.partition_id = $2::uuid
  AND (cardinality($3::text[]) = 0 OR s.key = ANY ($3::text[]))
  AND ($4::text = '' OR starts_with(s.key, $4::text))
  AND ($5::numeric IS NULL OR (jsonb_typeof(s.value -> 'windowEnd') = 'number'
                              AND (s.value ->> 'windowEnd')::numeric <= $5::numeric))
ORDER BY s.key COLLATE "C"
LIMIT $6`

// StreamStateGet returns the state rows of one shard matching f, sorted by key (byte
// order), at most limit of them. The ripe bound goes as numeric, so it is compared
// exactly: a float8 cast to numeric keeps 15 significant digits, which took a window
// ending at an epoch millisecond for ripe at a bound a few microseconds before it.
func (s *Store) StreamStateGet(ctx context.Context, f queue.StateFilter, limit int) ([]queue.StateRow, error) {
	keys := f.Keys
	if keys == nil {
		keys = []string{}
	}
	rows, err := s.pool.Query(ctx, sqlStreamStateGet, f.QueryID, f.PartitionID, keys, f.Prefix, f.RipeAtOrBefore, limit)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue.StateRow, error) {
		var r queue.StateRow
		var value string
		err := row.Scan(&r.Key, &value, &r.UpdatedAt)
		r.Value, r.UpdatedAt = []byte(value), r.UpdatedAt.UTC()
		return r, err
	})
	return out, interpretError(err)
}

// sqlStreamQuerySummary lists queries ($1: one name, or NULL for all) with their
// footprint: shards are the partitions with state rows or recorded cycles (a database
// written by upstream has state without shard rows).
const sqlStreamQuerySummary = `WITH q AS (
    SELECT * FROM queen_streams.queries WHERE $1::text IS NULL OR name = $1::text
),
st AS (
    SELECT s.query_id, s.partition_id, count(*) AS n FROM queen_streams.state s
    WHERE s.query_id IN (SELECT id FROM q) GROUP BY 1, 2
),
sh AS (
    SELECT h.query_id, h.partition_id, h.cycles, h.last_cycle_at FROM queen_streams.shards h
    WHERE h.query_id IN (SELECT id FROM q)
),
agg AS (
    SELECT coalesce(st.query_id, sh.query_id) AS qid, count(*) AS shards, sum(coalesce(st.n, 0))::bigint AS n,
           sum(coalesce(sh.cycles, 0))::bigint AS cycles, max(sh.last_cycle_at) AS last
    FROM st FULL JOIN sh ON sh.query_id = st.query_id AND sh.partition_id = st.partition_id
    GROUP BY 1
)
SELECT q.id::text, q.name, q.source_queue, coalesce(q.sink_queue, ''), q.config_hash,
       coalesce(q.created_at, 'epoch'), coalesce(q.updated_at, q.created_at, 'epoch'),
       coalesce(agg.shards, 0), coalesce(agg.n, 0), coalesce(agg.cycles, 0), agg.last, count(*) OVER ()
FROM q LEFT JOIN agg ON agg.qid = q.id
ORDER BY q.name COLLATE "C"
LIMIT $2 OFFSET $3`

// StreamQueryList returns one page of the registered queries by name, with their
// footprint, and the number of queries.
func (s *Store) StreamQueryList(ctx context.Context, page queue.Page) ([]queue.StreamQuery, int64, error) {
	return s.streamQueries(ctx, nil, page)
}

func (s *Store) streamQueries(ctx context.Context, name *string, page queue.Page) ([]queue.StreamQuery, int64, error) {
	rows, err := s.pool.Query(ctx, sqlStreamQuerySummary, name, page.Limit, page.Offset)
	if err != nil {
		return nil, 0, interpretError(err)
	}
	var total int64
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue.StreamQuery, error) {
		var q queue.StreamQuery
		err := row.Scan(&q.ID, &q.Name, &q.SourceQueue, &q.SinkQueue, &q.ConfigHash, &q.CreatedAt, &q.UpdatedAt,
			&q.Shards, &q.StateRows, &q.Cycles, &q.LastCycleAt, &total)
		q.CreatedAt, q.UpdatedAt, q.LastCycleAt = q.CreatedAt.UTC(), q.UpdatedAt.UTC(), utcPtr(q.LastCycleAt)
		return q, err
	})
	if err != nil {
		return nil, 0, interpretError(err)
	}
	if len(out) == 0 && page.Offset > 0 {
		// The window function saw no row: count separately.
		err = s.pool.QueryRow(ctx, `SELECT count(*) FROM queen_streams.queries WHERE $1::text IS NULL OR name = $1::text`, name).Scan(&total)
	}
	return out, total, interpretError(err)
}

const sqlStreamShards = `WITH st AS (
    SELECT s.partition_id, count(*) AS n, max(s.updated_at) AS last, sum(pg_column_size(s.value))::bigint AS bytes
    FROM queen_streams.state s WHERE s.query_id = $1::uuid GROUP BY 1
),
sh AS (
    SELECT h.partition_id, h.cycles, h.last_cycle_at FROM queen_streams.shards h WHERE h.query_id = $1::uuid
),
j AS (
    SELECT coalesce(st.partition_id, sh.partition_id) AS pid, coalesce(st.n, 0) AS n, st.last,
           coalesce(st.bytes, 0) AS bytes, coalesce(sh.cycles, 0) AS cycles, sh.last_cycle_at
    FROM st FULL JOIN sh ON sh.partition_id = st.partition_id
)
SELECT j.pid::text, coalesce(p.name, ''), coalesce(qq.name, ''), j.n, j.cycles, j.last_cycle_at, j.last, j.bytes
FROM j
LEFT JOIN queen.partitions p ON p.id = j.pid
LEFT JOIN queen.queues qq ON qq.id = p.queue_id
ORDER BY j.last_cycle_at DESC NULLS LAST, j.last DESC NULLS LAST, j.pid
LIMIT $2 OFFSET $3`

// StreamQueryGet returns the query name with one page of its shards, most recently
// cycled first; queue.ErrNotFound when there is no such query.
func (s *Store) StreamQueryGet(ctx context.Context, name string, page queue.Page) (queue.StreamQueryDetail, error) {
	d := queue.StreamQueryDetail{Page: page}
	qs, _, err := s.streamQueries(ctx, &name, queue.Page{Limit: 1})
	if err != nil {
		return d, err
	}
	if len(qs) == 0 {
		return d, fmt.Errorf("%w: stream query %q", queue.ErrNotFound, name)
	}
	d.Query = qs[0]
	rows, err := s.pool.Query(ctx, sqlStreamShards, d.Query.ID, page.Limit, page.Offset)
	if err != nil {
		return d, interpretError(err)
	}
	d.Shards, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue.StreamShard, error) {
		var sh queue.StreamShard
		err := row.Scan(&sh.PartitionID, &sh.Partition, &sh.Queue, &sh.StateRows, &sh.Cycles, &sh.LastCycleAt,
			&sh.LastStateAt, &sh.StateBytes)
		sh.LastCycleAt, sh.LastStateAt = utcPtr(sh.LastCycleAt), utcPtr(sh.LastStateAt)
		return sh, err
	})
	return d, interpretError(err)
}

// StreamQueryRemove resets (deleteQuery false: state and shards go, the registration
// stays) or deletes the query name; queue.ErrNotFound when there is no such query.
func (s *Store) StreamQueryRemove(ctx context.Context, name string, deleteQuery bool) (queue.StreamRemoval, error) {
	r := queue.StreamRemoval{Name: name}
	err := s.pool.QueryRow(ctx, `SELECT o_id::text, o_state_rows, o_shards FROM queen_streams.remove_q1($1, $2)`,
		name, deleteQuery).Scan(&r.QueryID, &r.StateRows, &r.Shards)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return r, fmt.Errorf("%w: stream query %q", queue.ErrNotFound, name)
		}
		return r, interpretError(err)
	}
	return r, nil
}
