package store

import (
	"context"

	"github.com/queenmq/queen/internal/queue"
)

// PartitionCount returns the number of partitions of the queue queueName, or of
// every queue of the scope for "". It is the total of the pages PartitionStatusList
// returns.
func (s *Store) PartitionCount(ctx context.Context, sc queue.Scope, queueName string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `
SELECT count(*) FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
WHERE ($1::text = '' OR q.name = $1::text) AND ($2::text = '' OR starts_with(q.name::text, $2::text))`,
		queueName, sc.Prefix()).Scan(&n)
	return n, interpretError(err)
}
