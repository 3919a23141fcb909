package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// MaxConsumerGroupRows caps every consumer-group listing: (group, queue) rows of the
// overview, cursors of the lagging list and of one group.
const MaxConsumerGroupRows = 10000

// ConsumerGroups summarises every consumer group (queue mode included) of every queue
// of the scope (a group with a cursor, a subscription or a wildcard registration on
// it), ordered by group then queue.
func (b *Broker) ConsumerGroups(ctx context.Context, sc queue.Scope) ([]queue.ConsumerGroupSummary, error) {
	return b.store.ConsumerGroupList(ctx, sc, MaxConsumerGroupRows)
}

// ConflatingGroups returns the (stored group, queue) pairs of group on the scope's
// queues whose stored policy is conflation (last-value delivery).
func (b *Broker) ConflatingGroups(ctx context.Context, sc queue.Scope, group string) (map[queue.GroupQueue]bool, error) {
	return b.store.ConflatingGroups(ctx, sc, group)
}

// QueueConsumerGroups says how far each consumer group (queue mode included) of one
// queue (its full name) is behind, by group.
func (b *Broker) QueueConsumerGroups(ctx context.Context, name string) ([]queue.ConsumerGroupSummary, error) {
	return b.store.QueueConsumerGroups(ctx, name, MaxConsumerGroupRows)
}

// ConsumerGroupsLagging returns the cursors, of every group, whose oldest unconsumed
// message is older than minLag, most lagging first, on the scope's queues.
func (b *Broker) ConsumerGroupsLagging(ctx context.Context, sc queue.Scope, minLag time.Duration) ([]queue.ConsumerGroupCursor, error) {
	if minLag < 0 {
		return nil, queue.Invalid("minLagSeconds", "minLagSeconds must not be negative")
	}
	return b.store.ConsumerGroupLagging(ctx, sc, minLag, MaxConsumerGroupRows)
}

// ConsumerGroup returns one group's cursors on the scope's queues with their lag, by
// queue; queue.ErrNotFound when the group has neither a cursor nor a subscription there.
func (b *Broker) ConsumerGroup(ctx context.Context, sc queue.Scope, group string) (queue.ConsumerGroupDetail, error) {
	if err := queue.CheckName("group", group); err != nil {
		return nil, err
	}
	d, err := b.store.ConsumerGroupCursors(ctx, sc, group, MaxConsumerGroupRows)
	if err != nil {
		return nil, err
	}
	if len(d) == 0 {
		return nil, fmt.Errorf("%w: consumer group %q", queue.ErrNotFound, group)
	}
	return d, nil
}

// ConsumerGroupDelete deletes a group's cursors and leases on queueName ("" = every
// queue of the scope), its watermarks and, with deleteMetadata, its subscriptions, so
// that its next pop starts over. It returns the number of cursors deleted.
func (b *Broker) ConsumerGroupDelete(ctx context.Context, sc queue.Scope, group, queueName string, deleteMetadata bool) (int, error) {
	if err := queue.CheckName("group", group); err != nil {
		return 0, err
	}
	if queueName != "" {
		if err := queue.CheckName("queue", queueName); err != nil {
			return 0, err
		}
	}
	b.dropHeld("", "") // the group's stored name depends on the scope: drop them all
	defer b.dropHeld("", "")
	return b.store.ConsumerGroupDelete(ctx, sc, group, queueName, deleteMetadata)
}

// ConsumerGroupSubscriptionUpdate moves every subscription of a group (all queues of
// the scope) to ts. Only partitions on which the group has no cursor yet read from it.
// It returns the number of subscriptions updated.
func (b *Broker) ConsumerGroupSubscriptionUpdate(ctx context.Context, sc queue.Scope, group string, ts time.Time) (int, error) {
	if err := queue.CheckName("group", group); err != nil {
		return 0, err
	}
	return b.store.ConsumerGroupSubscriptionUpdate(ctx, sc, group, ts)
}

// ConsumerGroupSeek moves a group's cursors on a queue to the end or to a timestamp
// (see queen.consumer_group_seek_q1 for what is moved, and why a timestamp seek also
// moves the group's subscription back). It returns the number of cursors written;
// queue.ErrNotFound when the queue does not exist. A timestamp seek wakes the queue's
// parked long-polls, which may now have messages to replay.
func (b *Broker) ConsumerGroupSeek(ctx context.Context, group, queueName string, seek queue.ConsumerGroupSeek) (int, error) {
	if err := queue.CheckName("group", group); err != nil {
		return 0, err
	}
	if err := queue.CheckName("queue", queueName); err != nil {
		return 0, err
	}
	b.dropHeld(queueName, group)
	n, err := b.store.ConsumerGroupSeek(ctx, group, queueName, seek)
	b.dropHeld(queueName, group)
	if err != nil {
		return 0, err
	}
	if !seek.ToEnd {
		b.waiters.notify(queueName)
		b.wakeup.announce(queueName)
	}
	return n, nil
}

// ConsumerGroupPartitionSeek moves a group's cursor on one partition to its newest
// message and releases its lease; queue.ErrNotFound when the queue or the partition
// does not exist.
func (b *Broker) ConsumerGroupPartitionSeek(ctx context.Context, group, queueName, partition string) (queue.ConsumerGroupPartitionSeek, error) {
	for _, v := range []struct{ field, value string }{
		{"group", group}, {"queue", queueName}, {"partition", partition},
	} {
		if err := queue.CheckName(v.field, v.value); err != nil {
			return queue.ConsumerGroupPartitionSeek{}, err
		}
	}
	b.dropHeld(queueName, group)
	defer b.dropHeld(queueName, group)
	return b.store.ConsumerGroupPartitionSeek(ctx, group, queueName, partition)
}
