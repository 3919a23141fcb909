package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queenmq/queen/internal/queue"
)

// pgxQuerier is what the shared query helpers need: the pool and a pgx.Tx both
// satisfy it, so the same code runs standalone and inside /transaction.
type pgxQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

const sqlMessageInsertBatch = `SELECT o_idx, o_status, coalesce(o_message_id::text, ''), o_partition_id::text
FROM queen.push_q3($1::text[], $2::text[], $3::integer[], $4::text[], $5::text[], $6::text, $7::text[], $8::text[], $9::boolean[],
                   $10::text[], $11::text[])`

// pushAttempts bounds the retries of a push whose partition was deleted by the cleanup
// job between its resolution and its lock (queen.push_q3: 23503), or between its
// creation and its resolution (queen.partitions_resolve_q1: 40001), or that deadlocked
// with a delete of its queue (40P01): the failed call wrote nothing, and the next one
// creates the queue or partition again.
const pushAttempts = 3

// MessageInsertBatch appends items (already validated, with message and transaction
// ids assigned) in one transaction and returns one result per item in input order:
// queued, or duplicate carrying the stored message id.
func (s *Store) MessageInsertBatch(ctx context.Context, items []queue.PushItem) ([]queue.PushResult, error) {
	args := newPushArgs(items)
	for attempt := 1; ; attempt++ {
		res, direct, err := s.messageInsertDirect(ctx, items, args)
		switch {
		case err == nil && direct:
			s.pushDirect.Add(1)
		case err == nil:
			s.pushGeneral.Add(1)
			res, err = messageInsertBatch(ctx, s.pool, items, args)
		}
		if err == nil || attempt == pushAttempts || !isPartitionRace(err) {
			return res, err
		}
	}
}

// PushPaths counts the pushes MessageInsertBatch stored by the direct path (every
// partition existed, no queue had a maxSize) and by queen.push_q3 (the general path).
func (s *Store) PushPaths() (direct, general uint64) {
	return s.pushDirect.Load(), s.pushGeneral.Load()
}

// isPartitionRace reports the errors of a push that lost a race with a partition's or
// its queue's deletion (see pushAttempts).
func isPartitionRace(err error) bool {
	return isDeletedMeanwhile(err) || isLockConflict(err)
}

// pushArgs are the parameters of one push_q3 call: the distinct (queue, partition)
// pairs, per item the 1-based index of its pair and its columns, the payloads as one
// JSON array, and nil (SQL NULL) for the optional columns no item uses.
type pushArgs struct {
	queues, partitions []string
	pair               []int32
	txids, ids         []string
	payloads           string
	traces, subs       []*string
	encrypted          []bool
	parents, states    []*string // W3C trace contexts
}

func newPushArgs(items []queue.PushItem) *pushArgs {
	n := len(items)
	a := &pushArgs{pair: make([]int32, n), txids: make([]string, n), ids: make([]string, n)}
	type key struct{ queue, partition string }
	pairs := make(map[key]int32, 1)
	size := 2 + n
	for i := range items {
		size += len(items[i].Payload)
	}
	payloads := make([]byte, 0, size)
	payloads = append(payloads, '[')
	for i := range items {
		it := &items[i]
		k := key{it.Queue, it.Partition}
		p, ok := pairs[k]
		if !ok {
			a.queues = append(a.queues, it.Queue)
			a.partitions = append(a.partitions, it.Partition)
			p = int32(len(a.queues))
			pairs[k] = p
		}
		a.pair[i] = p
		a.txids[i], a.ids[i] = it.TransactionID, it.MessageID
		if i > 0 {
			payloads = append(payloads, ',')
		}
		payloads = append(payloads, it.Payload...)
		if it.TraceID != "" {
			if a.traces == nil {
				a.traces = make([]*string, n)
			}
			a.traces[i] = &it.TraceID
		}
		if it.ProducerSub != "" {
			if a.subs == nil {
				a.subs = make([]*string, n)
			}
			a.subs[i] = &it.ProducerSub
		}
		if it.Traceparent != "" {
			if a.parents == nil {
				a.parents = make([]*string, n)
			}
			a.parents[i] = &it.Traceparent
			if it.Tracestate != "" {
				if a.states == nil {
					a.states = make([]*string, n)
				}
				a.states[i] = &it.Tracestate
			}
		}
		if it.Encrypted {
			if a.encrypted == nil {
				a.encrypted = make([]bool, n)
			}
			a.encrypted[i] = true
		}
	}
	a.payloads = string(append(payloads, ']'))
	return a
}

func messageInsertBatch(ctx context.Context, q pgxQuerier, items []queue.PushItem, a *pushArgs) ([]queue.PushResult, error) {
	n := len(items)
	rows, err := q.Query(ctx, sqlMessageInsertBatch, a.queues, a.partitions, a.pair, a.txids, a.ids,
		a.payloads, a.traces, a.subs, a.encrypted, a.parents, a.states)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	results := make([]queue.PushResult, n)
	seen := 0
	var lastStatus, lastPID string
	// Scan targets live across rows: their addresses escape into Scan.
	var idx int
	var status, msgID, partID pgtype.DriverBytes
	for rows.Next() {
		if err := rows.Scan(&idx, &status, &msgID, &partID); err != nil {
			return nil, interpretError(err)
		}
		if idx < 0 || idx >= n {
			return nil, fmt.Errorf("store: push returned item index %d of %d", idx, n)
		}
		it := &items[idx]
		id := it.MessageID // a queued item's stored id is its own: no new string
		if string(msgID) != id {
			id = string(msgID)
		}
		results[idx] = queue.PushResult{
			Index: idx, Status: reuse(&lastStatus, status), TransactionID: it.TransactionID, MessageID: id,
			PartitionID: reuse(&lastPID, partID), TraceID: it.TraceID, Queue: it.Queue, Partition: it.Partition,
		}
		seen++
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	if seen != n {
		return nil, fmt.Errorf("store: push returned %d results for %d items", seen, n)
	}
	return results, nil
}
