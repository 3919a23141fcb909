package store

import (
	"context"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

const sqlPartitionClaim = `SELECT o_partition_id::text, o_partition, o_id::text, o_transaction_id,
       coalesce(o_trace_id::text, ''), o_payload, coalesce(o_producer_sub, ''), o_created_at, o_retry_count
FROM queen.pop_q1($1, $2, $3, $4, $5, $6, $7, $8, $9)`

// PartitionClaim runs one pop attempt: it claims partitions of req.Queue for
// req.ConsumerGroup under leaseID and returns their next messages (none is not an
// error). Long-polling is the caller's business.
func (s *Store) PartitionClaim(ctx context.Context, req queue.PopRequest, leaseID string) ([]queue.Message, error) {
	var partition *string
	if req.Partition != "" {
		partition = &req.Partition
	}
	maxPartitions := req.Partitions
	if partition != nil || maxPartitions < 1 {
		maxPartitions = 1
	}
	rows, err := s.pool.Query(ctx, sqlPartitionClaim, req.Queue, partition, req.ConsumerGroup, leaseID,
		req.Batch, maxPartitions, req.AutoAck, req.SubscriptionMode, req.SubscriptionFrom)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var msgs []queue.Message
	for rows.Next() {
		var m queue.Message
		var payload []byte
		var created time.Time
		if err := rows.Scan(&m.PartitionID, &m.Partition, &m.ID, &m.TransactionID, &m.TraceID,
			&payload, &m.ProducerSub, &created, &m.RetryCount); err != nil {
			return nil, interpretError(err)
		}
		m.Payload = payload
		m.CreatedAt = created.UTC()
		m.Queue = req.Queue
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	return msgs, nil
}
