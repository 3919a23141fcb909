package store

import "context"

// PartitionCount returns the number of partitions of the queue queueName, or of
// every queue for "". It is the total of the pages PartitionStatusList returns.
func (s *Store) PartitionCount(ctx context.Context, queueName string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `
SELECT count(*) FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
WHERE ($1::text = '' OR q.name = $1::text)`, queueName).Scan(&n)
	return n, interpretError(err)
}
