package broker

import (
	"context"

	"github.com/queenmq/queen/internal/queue"
)

// The live status views of queues and partitions: counters computed now from the
// messages and the queue-mode cursors (the analytics reports live in
// internal/analytics).

// MaxQueuePartitions caps the partitions one queue's status view lists (its totals
// count every partition).
const MaxQueuePartitions = 10000

// Namespaces returns live counters per namespace of the scope's queues.
func (b *Broker) Namespaces(ctx context.Context, sc queue.Scope) ([]queue.GroupCounters, error) {
	return b.store.GroupCounterList(ctx, sc, "namespace")
}

// Tasks returns live counters per task of the scope's queues.
func (b *Broker) Tasks(ctx context.Context, sc queue.Scope) ([]queue.GroupCounters, error) {
	return b.store.GroupCounterList(ctx, sc, "task")
}

// Partitions lists one page of partitions with live counters, by queue then name,
// and the number of partitions across pages; queueName (a stored name) "" lists all of
// the scope. An unknown queue is queue.ErrNotFound.
func (b *Broker) Partitions(ctx context.Context, sc queue.Scope, queueName string, page queue.Page) ([]queue.PartitionStatus, int64, error) {
	if err := checkPage(page); err != nil {
		return nil, 0, err
	}
	if queueName != "" {
		if err := checkText("queue", queueName, queue.MaxNameLength); err != nil {
			return nil, 0, err
		}
		if _, err := b.store.QueueGet(ctx, queueName); err != nil {
			return nil, 0, err
		}
	}
	total, err := b.store.PartitionCount(ctx, sc, queueName)
	if err != nil {
		return nil, 0, err
	}
	parts, err := b.store.PartitionStatusList(ctx, sc, queueName, page)
	return parts, total, err
}

// QueueStatusList returns one page of the scope's queues (namespace, task: exact
// match, "" = any), newest first, with live counters.
func (b *Broker) QueueStatusList(ctx context.Context, sc queue.Scope, name, namespace, task string,
	page queue.Page) ([]queue.QueueStatus, error) {
	if err := checkText("queue", name, queue.MaxNameLength); err != nil {
		return nil, err
	}
	if err := checkText("namespace", namespace, queue.MaxNameLength); err != nil {
		return nil, err
	}
	if err := checkText("task", task, queue.MaxNameLength); err != nil {
		return nil, err
	}
	if err := checkPage(page); err != nil {
		return nil, err
	}
	return b.store.QueueStatusList(ctx, sc, name, namespace, task, page)
}

// QueueStatusDetail is a queue's status view: its configuration, its totals over every
// partition, and the first partitions by name with their counters.
type QueueStatusDetail struct {
	Info queue.QueueInfo
	// Totals holds the counters, partition count and queue-mode consumed count of
	// every partition, however many Partitions lists.
	Totals     queue.QueueStatus
	Partitions []queue.PartitionStatus
}

// QueueStatus returns a queue's status view listing at most limit partitions (0 to
// MaxQueuePartitions; 0 lists none); queue.ErrNotFound when absent.
func (b *Broker) QueueStatus(ctx context.Context, name string, limit int) (QueueStatusDetail, error) {
	var d QueueStatusDetail
	if err := checkText("queue", name, queue.MaxNameLength); err != nil {
		return d, err
	}
	if limit < 0 || limit > MaxQueuePartitions {
		return d, queue.Invalid("partitionLimit", "partitionLimit must be between 0 and %d", MaxQueuePartitions)
	}
	var err error
	if d.Info, err = b.store.QueueGet(ctx, name); err != nil {
		return d, err
	}
	totals, err := b.store.QueueStatusList(ctx, queue.Scope{}, name, "", "", queue.Page{Limit: 1})
	if err != nil {
		return d, err
	}
	if len(totals) == 0 {
		return d, queue.ErrNotFound // deleted between the two reads
	}
	d.Totals = totals[0]
	if limit > 0 {
		d.Partitions, err = b.store.PartitionStatusList(ctx, queue.Scope{}, name, queue.Page{Limit: limit})
	}
	return d, err
}

// QueueMessages returns one page of a queue's messages, newest first, with their
// queue-mode status; queue.ErrNotFound when the queue does not exist.
func (b *Broker) QueueMessages(ctx context.Context, name string, page queue.Page) ([]queue.MessageInfo, error) {
	if err := checkText("queue", name, queue.MaxNameLength); err != nil {
		return nil, err
	}
	if err := checkPage(page); err != nil {
		return nil, err
	}
	if _, err := b.store.QueueGet(ctx, name); err != nil {
		return nil, err
	}
	return b.store.QueueMessagesRecent(ctx, name, page)
}
