package broker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/queenmq/queen/internal/queue"
)

// StreamRegister registers or resumes the stream query r.Name (see docs/streams.md).
// A config hash mismatch without reset comes back as Mismatch, with nothing changed.
func (b *Broker) StreamRegister(ctx context.Context, r queue.StreamRegistration) (queue.StreamRegistered, error) {
	if err := checkText("name", r.Name, queue.MaxNameLength); err != nil {
		return queue.StreamRegistered{}, err
	}
	// Names and hashes are compared: two that decoded to the same U+FFFD would be one.
	if err := queue.CheckNoReplacement("name", r.Name); err != nil {
		return queue.StreamRegistered{}, err
	}
	if err := queue.CheckNoReplacement("config_hash", r.ConfigHash); err != nil {
		return queue.StreamRegistered{}, err
	}
	if err := queue.CheckName("source_queue", r.SourceQueue); err != nil {
		return queue.StreamRegistered{}, err
	}
	if r.SinkQueue != "" {
		if err := queue.CheckName("sink_queue", r.SinkQueue); err != nil {
			return queue.StreamRegistered{}, err
		}
	}
	if err := checkText("config_hash", r.ConfigHash, queue.MaxStreamConfigHashLength); err != nil {
		return queue.StreamRegistered{}, err
	}
	return b.store.StreamRegister(ctx, r)
}

// StreamCycle validates and applies one cycle atomically: state ops, sink pushes (with
// push semantics: dedup, ids in item order, maxSize, encryption of the sink queue) and
// the source ack. A refused cycle (unknown state op, stale lease, full sink, ack of a
// message the cursor already passed …) is Success false with nothing applied; bad
// input is a validation error. Long-polls of the sink queues wake after the commit,
// and so does one pop of the ack's group parked on the source queue (any partition),
// with the other replicas' pops of that queue, when the ack ended the lease: what is
// left of the partition is theirs to take.
func (b *Broker) StreamCycle(ctx context.Context, c queue.StreamCycle) (queue.StreamCycleResult, error) {
	res, err := b.streamCycle(ctx, &c)
	b.streams.recordCycle(c, res, err)
	if err != nil || !res.Success {
		return res, err
	}
	b.analytics.RecordCycle(time.Now(), c, res)
	b.wakeQueues(c.Push)
	if res.Ack != nil && res.Ack.LeaseReleased {
		b.wakeFreed(res.SourceQueue, c.ConsumerGroup, "")
	}
	return res, nil
}

// StreamCycleUnreadable counts a cycle whose body could not be decoded (refused before
// StreamCycle) as an errored cycle.
func (b *Broker) StreamCycleUnreadable() { b.streams.errored.Add(1) }

func (b *Broker) streamCycle(ctx context.Context, c *queue.StreamCycle) (queue.StreamCycleResult, error) {
	res := queue.StreamCycleResult{QueryID: c.QueryID, PartitionID: c.PartitionID}
	if err := checkShard(c.QueryID, c.PartitionID); err != nil {
		return res, err
	}
	if c.ConsumerGroup == "" {
		c.ConsumerGroup = queue.QueueModeGroup
	} else if err := queue.CheckName("consumer_group", c.ConsumerGroup); err != nil {
		return res, err
	}
	if len(c.StateOps) > queue.MaxStreamStateOps {
		return res, queue.Invalid("state_ops", "state_ops: at most %d ops per cycle (got %d)", queue.MaxStreamStateOps, len(c.StateOps))
	}
	for i, op := range c.StateOps {
		field := fmt.Sprintf("state_ops[%d]", i)
		if err := checkStateOp(field, op); err != nil {
			return res, err
		}
		if op.Type != queue.StateOpUpsert && op.Type != queue.StateOpDelete {
			res.Error = fmt.Sprintf("%s: unknown state op type %q (use %q or %q)", field, op.Type, queue.StateOpUpsert, queue.StateOpDelete)
			return b.refusedCycle(ctx, res, c.QueryID)
		}
	}
	if err := b.preparePush(c.Push, "push_items"); err != nil {
		return res, err
	}
	if a := c.Ack; a != nil {
		if a.TransactionID == "" {
			return res, queue.Invalid("ack.transactionId", "ack.transactionId is required")
		}
		for _, f := range []struct{ field, value string }{
			{"ack.transactionId", a.TransactionID}, {"ack.leaseId", a.LeaseID}, {"ack.status", a.Status},
		} {
			if err := checkText(f.field, f.value, queue.MaxTransactionIDLength); err != nil {
				return res, err
			}
			if err := queue.CheckNoReplacement(f.field, f.value); err != nil {
				return res, err
			}
		}
		if err := checkText("ack.error", a.Error, maxAckErrorLength); err != nil {
			return res, err
		}
		if a.Count < 0 {
			return res, queue.Invalid("ack.count", "ack.count must not be negative")
		}
		switch a.Status { // case-sensitive, as the SDKs send them
		case "", queue.AckCompleted, queue.AckSuccess, queue.AckFailed, queue.AckDLQ:
		default:
			res.Error = fmt.Sprintf("ack failed: invalid ack status %q: use completed, success, failed or dlq (lower case)", a.Status)
			return b.refusedCycle(ctx, res, c.QueryID)
		}
	}
	if err := b.sealPayloads(ctx, c.Push); err != nil {
		return res, err
	}
	res, err := b.store.StreamCycleRun(ctx, *c)
	if err != nil {
		b.analytics.RecordDBError(time.Now(), err)
	}
	if err == nil && res.Success {
		for i := range res.Push {
			res.Push[i].Index = i
		}
	}
	return res, err
}

// refusedCycle completes the answer of a cycle refused before it ran with the query's
// source queue, which every cycle's answer names ("" for an unknown query).
func (b *Broker) refusedCycle(ctx context.Context, res queue.StreamCycleResult, queryID string) (queue.StreamCycleResult, error) {
	source, err := b.store.StreamSourceQueue(ctx, queryID)
	res.SourceQueue = source
	return res, err
}

// maxAckErrorLength caps the DLQ error text an ack may carry.
const maxAckErrorLength = 10000

// checkShard validates the ids naming a (query, partition) shard.
func checkShard(queryID, partitionID string) error {
	if !queue.IsUUID(queryID) {
		return queue.Invalid("query_id", "query_id must be a UUID")
	}
	if !queue.IsUUID(partitionID) {
		return queue.Invalid("partition_id", "partition_id must be a UUID")
	}
	return nil
}

func checkStateOp(field string, op queue.StateOp) error {
	if err := checkStateKey(field+".key", op.Key); err != nil {
		return err
	}
	if op.Type != queue.StateOpUpsert {
		return nil
	}
	if op.Value == nil {
		return queue.Invalid(field+".value", "%s.value is required for an upsert", field)
	}
	if len(op.Value) > queue.MaxStreamValueBytes {
		return queue.Invalid(field+".value", "%s.value must be at most %d bytes of JSON (got %d)", field,
			queue.MaxStreamValueBytes, len(op.Value))
	}
	return queue.CheckPayload(field+".value", op.Value)
}

func checkStateKey(field, key string) error {
	if len(key) > queue.MaxStreamKeyBytes {
		return queue.Invalid(field, "%s must be at most %d bytes (got %d)", field, queue.MaxStreamKeyBytes, len(key))
	}
	if !utf8.ValidString(key) || strings.IndexByte(key, 0) >= 0 {
		return queue.Invalid(field, "%s must be valid UTF-8 without NUL characters", field)
	}
	return queue.CheckNoReplacement(field, key)
}

// StreamState reads state rows of one shard: by keys, key prefix (taken literally) and
// ripeness, combined with AND, sorted by key in byte order. A read matching more than
// queue.MaxStreamStateRows rows is refused rather than truncated.
func (b *Broker) StreamState(ctx context.Context, f queue.StateFilter) ([]queue.StateRow, error) {
	if err := checkShard(f.QueryID, f.PartitionID); err != nil {
		return nil, err
	}
	if len(f.Keys) > queue.MaxStreamStateKeys {
		return nil, queue.Invalid("keys", "keys: at most %d keys per read (got %d)", queue.MaxStreamStateKeys, len(f.Keys))
	}
	for i, k := range f.Keys {
		if err := checkStateKey(fmt.Sprintf("keys[%d]", i), k); err != nil {
			return nil, err
		}
	}
	if err := checkStateKey("key_prefix", f.Prefix); err != nil {
		return nil, err
	}
	f.Keys = slices.Compact(slices.Sorted(slices.Values(f.Keys)))
	rows, err := b.store.StreamStateGet(ctx, f, queue.MaxStreamStateRows+1)
	if err != nil {
		return nil, err
	}
	if len(rows) > queue.MaxStreamStateRows {
		return nil, queue.Invalid("keys", "more than %d state rows match: name keys or a key_prefix to read fewer",
			queue.MaxStreamStateRows)
	}
	b.streams.stateReads.Add(1)
	return rows, nil
}

// Listing limits of the stream admin routes.
const (
	// MaxStreamListLimit caps a page of queries or of one query's shards.
	MaxStreamListLimit = 1000
)

// StreamQueries returns one page of registered queries by name with their footprint
// (shards, state rows, cycles, last cycle time) and the number of queries.
func (b *Broker) StreamQueries(ctx context.Context, page queue.Page) ([]queue.StreamQuery, int64, error) {
	if err := checkStreamPage(page); err != nil {
		return nil, 0, err
	}
	return b.store.StreamQueryList(ctx, page)
}

// StreamQuery returns the query name with one page of its shards, most recently
// cycled first; queue.ErrNotFound when there is none.
func (b *Broker) StreamQuery(ctx context.Context, name string, page queue.Page) (queue.StreamQueryDetail, error) {
	if err := checkText("name", name, queue.MaxNameLength); err != nil {
		return queue.StreamQueryDetail{}, err
	}
	if err := checkStreamPage(page); err != nil {
		return queue.StreamQueryDetail{}, err
	}
	return b.store.StreamQueryGet(ctx, name, page)
}

// StreamReset deletes the state of the query name and keeps its registration (the
// next cycles start from empty state); queue.ErrNotFound when there is none.
func (b *Broker) StreamReset(ctx context.Context, name string) (queue.StreamRemoval, error) {
	if err := checkText("name", name, queue.MaxNameLength); err != nil {
		return queue.StreamRemoval{}, err
	}
	return b.store.StreamQueryRemove(ctx, name, false)
}

// StreamDelete deletes the query name with its state; queue.ErrNotFound when there is
// none. A worker still running it gets "not found" on its next cycle and must
// register again.
func (b *Broker) StreamDelete(ctx context.Context, name string) (queue.StreamRemoval, error) {
	if err := checkText("name", name, queue.MaxNameLength); err != nil {
		return queue.StreamRemoval{}, err
	}
	return b.store.StreamQueryRemove(ctx, name, true)
}

func checkStreamPage(p queue.Page) error {
	if p.Limit < 1 || p.Limit > MaxStreamListLimit {
		return queue.Invalid("limit", "limit must be between 1 and %d", MaxStreamListLimit)
	}
	if p.Offset < 0 {
		return queue.Invalid("offset", "offset must not be negative")
	}
	return nil
}

// StreamCounters are this process's lifetime stream counters.
type StreamCounters struct {
	// Cycles by result: committed, failed (refused and rolled back) and error (the
	// database failed or the input was invalid).
	CyclesCommitted, CyclesFailed, CyclesError int64
	// StateUpserts and StateDeletes count the state ops of committed cycles.
	StateUpserts, StateDeletes int64
	// SinkQueued and SinkDuplicate count the sink push items of committed cycles.
	SinkQueued, SinkDuplicate int64
	// StateReads counts answered state reads.
	StateReads int64
}

// streamStats holds the counters behind [StreamCounters].
type streamStats struct {
	committed, failed, errored atomic.Int64
	upserts, deletes           atomic.Int64
	queued, duplicate          atomic.Int64
	stateReads                 atomic.Int64
}

func (s *streamStats) recordCycle(c queue.StreamCycle, res queue.StreamCycleResult, err error) {
	switch {
	case err != nil:
		s.errored.Add(1)
		return
	case !res.Success:
		s.failed.Add(1)
		return
	}
	s.committed.Add(1)
	for _, op := range c.StateOps {
		if op.Type == queue.StateOpUpsert {
			s.upserts.Add(1)
		} else {
			s.deletes.Add(1)
		}
	}
	for _, p := range res.Push {
		if p.Status == queue.StatusQueued {
			s.queued.Add(1)
		} else {
			s.duplicate.Add(1)
		}
	}
}

// StreamCounters returns the lifetime stream counters of this process.
func (b *Broker) StreamCounters() StreamCounters {
	s := &b.streams
	return StreamCounters{
		CyclesCommitted: s.committed.Load(), CyclesFailed: s.failed.Load(), CyclesError: s.errored.Load(),
		StateUpserts: s.upserts.Load(), StateDeletes: s.deletes.Load(),
		SinkQueued: s.queued.Load(), SinkDuplicate: s.duplicate.Load(), StateReads: s.stateReads.Load(),
	}
}
