package store

import (
	"context"
	"fmt"

	"github.com/queenmq/queen/internal/queue"
)

// sqlQueueDepth reads, per partition of queue $1, the messages after one cursor and
// the in-flight count of that cursor's live lease. With group $2 the cursor is the
// group's own: where it has none, its subscription (a named group's stored
// subscription timestamp, as its pop would start) or else the whole retained range,
// and messages past a ttl that pop applies are left out (pop never delivers them): the
// group's lag as the consumer-group views count it. Without a group, the lowest
// committed cursor of any group (a group that never committed one owes everything).
// Counting walks the (partition_id, created_at, id) index only, never a payload. The
// queue row always comes back, so an unknown queue is no row at all.
const sqlQueueDepth = `
SELECT p.name::text,
       CASE WHEN p.id IS NULL THEN 0 ELSE (
           SELECT count(*) FROM queen.messages m
           WHERE m.partition_id = p.id
             AND (s.ts IS NULL OR (m.created_at, m.id) > (s.ts, s.id))
             AND m.created_at > s.ttl_cut) END,
       coalesce(c.in_flight, 0)
FROM queen.queues q
LEFT JOIN queen.partitions p ON p.queue_id = q.id
LEFT JOIN LATERAL (
    SELECT pc.last_consumed_created_at AS cur_at, pc.last_consumed_id AS cur_id,
           CASE WHEN pc.worker_id IS NOT NULL AND pc.lease_expires_at > now()
                THEN greatest(coalesce(pc.batch_size, 0) - coalesce(pc.acked_count, 0), 0) ELSE 0 END AS in_flight
    FROM queen.partition_consumers pc
    WHERE pc.partition_id = p.id AND ($2::text IS NULL OR pc.consumer_group = $2::text)
    ORDER BY pc.last_consumed_created_at ASC NULLS FIRST, pc.last_consumed_id ASC
    LIMIT 1
) c ON true
CROSS JOIN LATERAL (
    SELECT CASE WHEN c.cur_at IS NOT NULL THEN c.cur_at
                WHEN $2::text <> '__QUEUE_MODE__' AND p.id IS NOT NULL
                THEN queen.subscription_stored_q1(q.name, p.name, $2::text, NULL) END AS ts,
           CASE WHEN c.cur_at IS NOT NULL THEN c.cur_id
                ELSE '00000000-0000-0000-0000-000000000000'::uuid END AS id,
           CASE WHEN $2::text IS NOT NULL AND queen.enforced_option_q1(q.ttl, q.queen_options, 'ttl') > 0
                THEN now() - make_interval(secs => q.ttl) ELSE '-infinity'::timestamptz END AS ttl_cut
) s
WHERE q.name = $1
ORDER BY p.name`

// QueueDepth returns the backlog of each partition of a queue, by partition name,
// against group's cursor (nil: the lowest cursor of any group); queue.ErrNotFound
// when there is no such queue.
func (s *Store) QueueDepth(ctx context.Context, name string, group *string) ([]queue.PartitionDepth, error) {
	rows, err := s.pool.Query(ctx, sqlQueueDepth, name, group)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	found := false
	out := []queue.PartitionDepth{}
	for rows.Next() {
		found = true
		var part *string
		var d queue.PartitionDepth
		if err := rows.Scan(&part, &d.Pending, &d.InFlight); err != nil {
			return nil, interpretError(err)
		}
		if part == nil {
			continue
		}
		d.Partition = *part
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	if !found {
		return nil, fmt.Errorf("%w: queue %q", queue.ErrNotFound, name)
	}
	return out, nil
}
