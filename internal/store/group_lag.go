package store

import (
	"context"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// sqlGroupLag computes, for every consumer of every queue of the scope prefix $1 (""
// = every queue; $3 one queue by full name, NULL = all), how far it is behind on each
// partition of the queue, and sums that per (group, queue).
// The consumers of a queue are the groups (queue mode, "__QUEUE_MODE__", included)
// with a cursor on one of its partitions, a subscription to it, or a wildcard
// registration on it. A partition without the group's cursor owes what the group will
// read there: everything after its subscription timestamp (queen.subscription_stored_q1:
// a partition-specific subscription wins over the queue-wide one), or everything for
// queue mode and groups without one. Messages past the queue's ttl are left out when
// pop applies that ttl: pop never delivers them. In flight is the unacknowledged part of a live lease. Each
// (group, partition) costs one range scan of idx_messages_partition_created, as long
// as its lag. $2 caps the rows. The last column is the group's stored conflation
// policy on the queue.
const sqlGroupLag = `
WITH ` + sqlGroupLagRows + `
SELECT g.grp, g.qname, g.members, g.with_lag, g.total_lag, g.in_flight,
       coalesce(extract(epoch FROM greatest(now() - g.oldest, '0'::interval)), 0)::float8, g.ever_consumed,
       md.subscription_mode, md.subscription_timestamp, md.created_at,
       coalesce((SELECT gp.conflation FROM queen.queues qq
                 JOIN queen.consumer_group_policies gp ON gp.queue_id = qq.id AND gp.consumer_group = g.grp
                 WHERE qq.name = g.qname), false)
FROM g
LEFT JOIN LATERAL (
    SELECT coalesce(m.subscription_mode, '')::text AS subscription_mode, m.subscription_timestamp,
           coalesce(m.created_at, now()) AS created_at
    FROM queen.consumer_groups_metadata m
    WHERE m.consumer_group = g.grp AND m.queue_name = g.qname AND m.namespace = '' AND m.task = ''
    ORDER BY (m.partition_name = '') DESC, m.created_at, m.id
    LIMIT 1
) md ON true
ORDER BY g.grp, g.qname
LIMIT $2`

// sqlGroupLagRows are the CTEs of sqlGroupLag, up to g, one row per (group, queue):
// $1 the scope prefix, $3 one queue (NULL = all), $4 the number of (group, queue)
// pairs taken, first by group and queue name (NULL = every pair). The consumer-lag
// history samples them too, so that its numbers are those of the consumer-group views.
const sqlGroupLagRows = `q AS (
    SELECT qq.id, qq.name::text AS qname,
           CASE WHEN queen.enforced_option_q1(qq.ttl, qq.queen_options, 'ttl') > 0
                THEN now() - make_interval(secs => qq.ttl) ELSE '-infinity' END AS ttl_cut
    FROM queen.queues qq
    WHERE ($1::text = '' OR starts_with(qq.name::text, $1::text)) AND ($3::text IS NULL OR qq.name = $3::text)
),
gq AS (
    SELECT DISTINCT x.qid, x.grp, q.qname
    FROM (
        SELECT p.queue_id AS qid, pc.consumer_group::text AS grp
        FROM queen.partition_consumers pc JOIN queen.partitions p ON p.id = pc.partition_id
        UNION ALL
        SELECT qq.id, md.consumer_group::text
        FROM queen.consumer_groups_metadata md JOIN queen.queues qq ON qq.name = md.queue_name
        WHERE md.namespace = '' AND md.task = ''
        UNION ALL
        SELECT qc.queue_id, qc.consumer_group::text FROM queen.queue_consumers qc
    ) x
    JOIN q ON q.id = x.qid
    -- A tenant sees its own groups and queue mode, not a global group reading its queue.
    WHERE $1::text = '' OR x.grp = '__QUEUE_MODE__' OR starts_with(x.grp, $1::text)
    ORDER BY x.grp, q.qname
    LIMIT $4::integer
),
c AS (
    SELECT gq.grp, q.qname, pc.partition_id IS NOT NULL AS has_cursor, pc.last_consumed_at, l.lag, l.oldest,
           CASE WHEN pc.worker_id IS NOT NULL AND pc.lease_expires_at > now()
                THEN least(greatest(coalesce(pc.batch_size, 0) - coalesce(pc.acked_count, 0), 0), l.lag)
                ELSE 0 END AS in_flight
    FROM gq
    JOIN q ON q.id = gq.qid
    JOIN queen.partitions p ON p.queue_id = q.id
    LEFT JOIN queen.partition_consumers pc ON pc.partition_id = p.id AND pc.consumer_group = gq.grp
    CROSS JOIN LATERAL (
        SELECT coalesce(pc.last_consumed_created_at,
                        CASE WHEN gq.grp <> '__QUEUE_MODE__'
                             THEN queen.subscription_stored_q1(q.qname, p.name, gq.grp, NULL) END,
                        '-infinity') AS ts,
               CASE WHEN pc.last_consumed_created_at IS NULL THEN '00000000-0000-0000-0000-000000000000'::uuid
                    ELSE pc.last_consumed_id END AS id
    ) s
    CROSS JOIN LATERAL (
        SELECT count(*) AS lag, min(m.created_at) AS oldest
        FROM queen.messages m
        WHERE m.partition_id = p.id
          AND (m.created_at, m.id) > (s.ts, s.id)
          AND m.created_at > q.ttl_cut
    ) l
),
g AS (
    SELECT c.grp, c.qname, (count(*) FILTER (WHERE c.has_cursor))::int AS members,
           (count(*) FILTER (WHERE c.lag > 0))::int AS with_lag,
           coalesce(sum(c.lag), 0)::bigint AS total_lag,
           coalesce(sum(c.in_flight), 0)::bigint AS in_flight,
           min(c.oldest) AS oldest,
           bool_or(c.last_consumed_at IS NOT NULL) AS ever_consumed
    FROM c
    GROUP BY c.grp, c.qname
)`

// ConsumerGroupList summarises every consumer (named group or queue mode) of every
// queue of the scope, ordered by group then queue, at most limit rows.
func (s *Store) ConsumerGroupList(ctx context.Context, sc queue.Scope, limit int) ([]queue.ConsumerGroupSummary, error) {
	return groupLag(ctx, s.pool, sc, nil, limit)
}

// QueueConsumerGroups summarises every consumer of one queue (its full name), by group.
func (s *Store) QueueConsumerGroups(ctx context.Context, name string, limit int) ([]queue.ConsumerGroupSummary, error) {
	return groupLag(ctx, s.pool, queue.Scope{}, &name, limit)
}

func groupLag(ctx context.Context, q pgxQuerier, sc queue.Scope, name *string, limit int) ([]queue.ConsumerGroupSummary, error) {
	rows, err := q.Query(ctx, sqlGroupLag, sc.Prefix(), limit, name, nil)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []queue.ConsumerGroupSummary
	for rows.Next() {
		var g queue.ConsumerGroupSummary
		var lagSeconds float64
		var mode *string
		var subTS, subCreated *time.Time
		if err := rows.Scan(&g.Group, &g.Queue, &g.Members, &g.PartitionsWithLag, &g.TotalLag, &g.InFlight,
			&lagSeconds, &g.EverConsumed, &mode, &subTS, &subCreated, &g.Conflation); err != nil {
			return nil, interpretError(err)
		}
		g.MaxTimeLag = secondsDuration(lagSeconds)
		if mode != nil {
			g.Subscription = &queue.ConsumerGroupSubscription{Mode: *mode, Timestamp: utcPtr(subTS)}
			if subCreated != nil {
				g.Subscription.CreatedAt = subCreated.UTC()
			}
		}
		out = append(out, g)
	}
	return out, interpretError(rows.Err())
}
