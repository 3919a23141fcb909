package queue

import "time"

// Consumer-group states of the administration listing.
const (
	ConsumerGroupLagging = "Lagging"
	ConsumerGroupStable  = "Stable"
	ConsumerGroupDead    = "Dead"
)

// ConsumerGroupLaggingAfter is the time lag beyond which a consumer group is Lagging.
const ConsumerGroupLaggingAfter = 300 * time.Second

// ConsumerGroupState names the state of a group whose oldest unconsumed message is
// maxTimeLag old: Lagging beyond ConsumerGroupLaggingAfter, otherwise Stable if it ever
// consumed anything, otherwise Dead.
func ConsumerGroupState(maxTimeLag time.Duration, everConsumed bool) string {
	switch {
	case maxTimeLag > ConsumerGroupLaggingAfter:
		return ConsumerGroupLagging
	case everConsumed:
		return ConsumerGroupStable
	}
	return ConsumerGroupDead
}

// ConsumerGroupSubscription is how a named consumer group subscribed to a queue: its
// mode ("new" or "timestamp") and the point in time it reads from when a partition has
// no cursor.
type ConsumerGroupSubscription struct {
	Mode      string
	Timestamp *time.Time
	CreatedAt time.Time
}

// GroupQueue names a consumer group on a queue (stored names).
type GroupQueue struct{ Group, Queue string }

// ConsumerGroupSummary is how far one consumer group (queue mode included) is behind
// on one queue.
type ConsumerGroupSummary struct {
	Group string
	Queue string
	// Members counts the group's partition cursors on the queue (not its clients).
	Members int
	// PartitionsWithLag counts the partitions of the queue with at least one message
	// the group has not consumed (with or without a cursor there).
	PartitionsWithLag int
	// TotalLag is the number of messages of the queue the group has not consumed yet,
	// leased ones included, on every partition: a partition the group has no cursor on
	// owes what the group will read there.
	TotalLag int64
	// InFlight is the part of TotalLag held by live leases, not yet acknowledged.
	InFlight int64
	// MaxTimeLag is the age of the oldest unconsumed message (0 when none).
	MaxTimeLag time.Duration
	// EverConsumed reports that some cursor has a last-consumed time.
	EverConsumed bool
	// Subscription is nil when the group has no subscription on the queue (queue mode,
	// or a group that reads from the beginning).
	Subscription *ConsumerGroupSubscription
	// Conflation reports the group's stored conflation policy on the queue
	// (last-value delivery); false when it has none.
	Conflation bool
}

// State is the group's state on the queue (see ConsumerGroupState).
func (g ConsumerGroupSummary) State() string { return ConsumerGroupState(g.MaxTimeLag, g.EverConsumed) }

// ConsumerGroupCursor is one partition cursor of a consumer group with its lag. Unconsumed
// messages are those after the cursor or, for a named group without a cursor, after
// its subscription timestamp; messages past the queue's ttl are not counted (they are
// never delivered).
type ConsumerGroupCursor struct {
	Group       string
	Queue       string
	Partition   string
	PartitionID string
	// WorkerID is the lease id stored on the cursor, "" when none.
	WorkerID string
	// LeaseActive reports a lease that has not expired yet.
	LeaseActive    bool
	LastConsumedAt *time.Time
	TotalConsumed  int64
	// OffsetLag is the exact number of unconsumed messages.
	OffsetLag int64
	// OldestUnconsumedAt is the creation time of the oldest unconsumed message, nil
	// when there is none.
	OldestUnconsumedAt *time.Time
	// TimeLag is the age of that message (0 when none).
	TimeLag time.Duration
}

// ConsumerGroupDetail is one consumer group's cursors, by queue name. A queue on which the
// group is subscribed but has no cursor yet maps to an empty list.
type ConsumerGroupDetail map[string][]ConsumerGroupCursor

// ConsumerGroupSeek says where a consumer group's cursors on a queue move to: each
// partition's newest message (ToEnd), or the newest message created at or before
// Timestamp.
type ConsumerGroupSeek struct {
	ToEnd     bool
	Timestamp time.Time
}

// ConsumerGroupPartitionSeek is the outcome of moving one partition cursor to the end.
type ConsumerGroupPartitionSeek struct {
	// Updated reports that a cursor was written (false for an empty partition the
	// group never consumed).
	Updated bool
	// CursorMovedTo is the creation time of the message the cursor now points at, nil
	// when the cursor is "before everything".
	CursorMovedTo *time.Time
}
