package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

// Tenant scope in SQL. Listings take the scope's prefix (queue.Scope.Prefix) as one
// more text parameter $n and filter their queue name column with
//
//	($n::text = '' OR starts_with(q.name::text, $n::text))
//
// so "" matches every queue. starts_with compares the prefix as plain text: no
// character of a tenant id is a pattern metacharacter, as it could be with LIKE.
// Id-addressed writes on the hot paths (ack, lease extend) keep their global query
// unchanged and run one ownership check first, only for a tenant scope.

const sqlPartitionsInScope = `SELECT p.id::text FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
WHERE p.id = ANY($1::uuid[]) AND starts_with(q.name::text, $2::text)`

// PartitionsInScope returns which of the partition ids (already validated as UUIDs)
// belong to a queue of the scope; every one of them for the global scope, without SQL.
func (s *Store) PartitionsInScope(ctx context.Context, sc queue.Scope, partitionIDs []string) (map[string]bool, error) {
	owned := make(map[string]bool, len(partitionIDs))
	if sc.IsGlobal() {
		for _, id := range partitionIDs {
			owned[id] = true
		}
		return owned, nil
	}
	rows, err := s.pool.Query(ctx, sqlPartitionsInScope, partitionIDs, sc.Prefix())
	if err != nil {
		return nil, interpretError(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, interpretError(err)
	}
	for _, id := range ids {
		owned[id] = true
	}
	return owned, nil
}

const sqlLeaseOutsideScope = `SELECT EXISTS (
    SELECT 1 FROM queen.partition_consumers c
    JOIN queen.partitions p ON p.id = c.partition_id
    JOIN queen.queues q ON q.id = p.queue_id
    WHERE c.worker_id = $1
      AND (NOT starts_with(q.name::text, $2::text)
           OR NOT (c.consumer_group = '__QUEUE_MODE__' OR starts_with(c.consumer_group::text, $2::text))))`

// LeaseInScope reports whether no cursor outside the scope holds the lease leaseID
// (a lease that exists nowhere is in every scope: extending it finds nothing). A
// cursor is outside a tenant's scope when its queue is another's, or when its group is
// a global one (not the tenant's, not queue mode) reading the tenant's queue: an
// operator's consumer. Lease ids are the broker's own random ids and a pop never
// spans tenants, so a lease is either wholly a tenant's or not at all.
func (s *Store) LeaseInScope(ctx context.Context, sc queue.Scope, leaseID string) (bool, error) {
	if sc.IsGlobal() {
		return true, nil
	}
	var outside bool
	if err := s.pool.QueryRow(ctx, sqlLeaseOutsideScope, leaseID, sc.Prefix()).Scan(&outside); err != nil {
		return false, interpretError(err)
	}
	return !outside, nil
}
