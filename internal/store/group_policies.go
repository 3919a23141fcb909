package store

import (
	"context"

	"github.com/queenmq/queen/internal/queue"
)

// sqlConflatingGroups lists the (group, queue) pairs of group $2 on the queues of the
// scope prefix $1 whose stored conflation policy is on.
const sqlConflatingGroups = `
SELECT gp.consumer_group::text, q.name::text
FROM queen.consumer_group_policies gp
JOIN queen.queues q ON q.id = gp.queue_id
WHERE gp.conflation AND starts_with(q.name::text, $1) AND gp.consumer_group = $2::text`

// ConflatingGroups returns the (stored group, queue) pairs of group on the scope's
// queues whose stored policy is conflation (last-value delivery). The policy of a
// group is stored by its first pop of a queue; the consumer-group summaries carry it
// too (queue.ConsumerGroupSummary.Conflation).
func (s *Store) ConflatingGroups(ctx context.Context, sc queue.Scope, group string) (map[queue.GroupQueue]bool, error) {
	rows, err := s.pool.Query(ctx, sqlConflatingGroups, sc.Prefix(), group)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := map[queue.GroupQueue]bool{}
	for rows.Next() {
		var k queue.GroupQueue
		if err := rows.Scan(&k.Group, &k.Queue); err != nil {
			return nil, interpretError(err)
		}
		out[k] = true
	}
	return out, interpretError(rows.Err())
}
