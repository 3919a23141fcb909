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
	if err := b.checkConfigured(q); err != nil {
		return q, "", err
	}
	defer b.queueFlags.forget(q.Name)
	id, partitionID, err := b.store.QueueConfigure(ctx, q)
	if err != nil {
		return q, "", err
	}
	q.ID = id
	return q, partitionID, nil
}

// ConfigureEdit applies one configure under merge or replace (see
// [queue.ConfigureEdit]) and returns the queue as now stored, with the id of its
// Default partition. Concurrent configures of one queue serialise; the resulting
// option set is validated before anything is written.
func (b *Broker) ConfigureEdit(ctx context.Context, e queue.ConfigureEdit) (queue.QueueInfo, string, error) {
	if err := queue.CheckName("queue", e.Name); err != nil {
		return queue.QueueInfo{}, "", err
	}
	defer b.queueFlags.forget(e.Name)
	return b.store.QueueConfigureEdit(ctx, e, b.checkConfigured)
}

// checkConfigured validates a queue's configuration as configure would store it.
func (b *Broker) checkConfigured(q queue.Queue) error {
	if err := checkText("namespace", q.Namespace, queue.MaxNameLength); err != nil {
		return err
	}
	if err := checkText("task", q.Task, queue.MaxNameLength); err != nil {
		return err
	}
	if err := q.Options.Validate(); err != nil {
		return err
	}
	if q.Options.EncryptionEnabled && b.cfg.Sealer == nil {
		return queue.Invalid("options.encryptionEnabled",
			"options.encryptionEnabled needs QUEEN_ENCRYPTION_KEY (64 hex characters) configured on the broker")
	}
	return nil
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
	b.dropHeld(name, "")
	defer b.dropHeld(name, "")
	return b.store.QueueDelete(ctx, name)
}

// Ping checks the database.
func (b *Broker) Ping(ctx context.Context) error { return b.store.Ping(ctx) }

// QueueDepth returns a queue's backlog per partition against group's cursor (nil: the
// lowest cursor of any group); queue.ErrNotFound for an unknown queue.
func (b *Broker) QueueDepth(ctx context.Context, name string, group *string) ([]queue.PartitionDepth, error) {
	if err := queue.CheckName("queue", name); err != nil {
		return nil, err
	}
	if group != nil {
		if err := checkText("group", *group, queue.MaxNameLength); err != nil {
			return nil, err
		}
	}
	return b.store.QueueDepth(ctx, name, group)
}
