package store

import (
	"context"

	"github.com/queenmq/queen/internal/queue"
)

// sqlConflatingGroups lists the (group, queue) pairs of the scope prefix $1 whose
// stored conflation policy is on, for group $2 (NULL: every group).
const sqlConflatingGroups = `
SELECT gp.consumer_group::text, q.name::text
FROM queen.consumer_group_policies gp
JOIN queen.queues q ON q.id = gp.queue_id
WHERE gp.conflation AND starts_with(q.name::text, $1) AND ($2::text IS NULL OR gp.consumer_group = $2::text)`

// ConflatingGroups returns the consumer groups of the scope's queues whose stored
// policy is conflation (last-value delivery), as stored (group, queue) names; group ""
// means every group. The policy of a group is stored by its first pop of a queue.
func (s *Store) ConflatingGroups(ctx context.Context, sc queue.Scope, group string) (map[queue.GroupQueue]bool, error) {
	var g *string
	if group != "" {
		g = &group
	}
	rows, err := s.pool.Query(ctx, sqlConflatingGroups, sc.Prefix(), g)
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
