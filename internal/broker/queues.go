package broker

import (
	"context"

	"github.com/queenmq/queen/internal/queue"
)

// Configure creates or replaces a queue's configuration (every option is replaced;
// absent ones take their defaults) and returns the stored queue with its id and the
// id of its Default partition.
func (b *Broker) Configure(ctx context.Context, q queue.Queue) (queue.Queue, string, error) {
	if err := queue.CheckName("queue", q.Name); err != nil {
		return q, "", err
	}
	if err := checkText("namespace", q.Namespace, queue.MaxNameLength); err != nil {
		return q, "", err
	}
	if err := checkText("task", q.Task, queue.MaxNameLength); err != nil {
		return q, "", err
	}
	if err := q.Options.Validate(); err != nil {
		return q, "", err
	}
	if q.Options.EncryptionEnabled && b.cfg.Sealer == nil {
		return q, "", queue.Invalid("options.encryptionEnabled",
			"options.encryptionEnabled needs QUEEN_ENCRYPTION_KEY (64 hex characters) configured on the broker")
	}
	defer b.queueFlags.forget(q.Name)
	id, partitionID, err := b.store.QueueConfigure(ctx, q)
	if err != nil {
		return q, "", err
	}
	q.ID = id
	return q, partitionID, nil
}

// QueueGet returns a queue with its partitions and counters (queue.ErrNotFound when
// absent).
func (b *Broker) QueueGet(ctx context.Context, name string) (queue.QueueInfo, error) {
	qi, err := b.store.QueueGet(ctx, name)
	if err != nil {
		return qi, err
	}
	parts, err := b.store.QueuePartitions(ctx, qi.ID)
	if err != nil {
		return qi, err
	}
	qi.Partitions = parts
	qi.PartitionCount = len(parts)
	for _, p := range parts {
		qi.Totals.Add(p.Counters)
	}
	return qi, nil
}

// QueueList returns every queue of the scope, newest first, with counters.
func (b *Broker) QueueList(ctx context.Context, sc queue.Scope) ([]queue.QueueInfo, error) {
	return b.store.QueueList(ctx, sc)
}

// QueueDelete deletes a queue and everything in it; existed reports whether it was there.
func (b *Broker) QueueDelete(ctx context.Context, name string) (bool, error) {
	if err := queue.CheckName("queue", name); err != nil {
		return false, err
	}
	defer b.queueFlags.forget(name)
	return b.store.QueueDelete(ctx, name)
}

// Ping checks the database.
func (b *Broker) Ping(ctx context.Context) error { return b.store.Ping(ctx) }
