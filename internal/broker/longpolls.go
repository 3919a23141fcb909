package broker

import (
	"cmp"
	"slices"
	"time"
)

// MaxLongPollGroups bounds the groups LongPolls returns.
const MaxLongPollGroups = 1000

// AnyPartition names the partition of a long-poll that takes any partition of its
// queue.
const AnyPartition = "*"

// LongPollGroup counts the long-poll pops of this broker parked on one queue by one
// consumer group for one partition (AnyPartition for pops that take any).
type LongPollGroup struct {
	Queue         string
	ConsumerGroup string
	Partition     string
	Count         int
	// OldestParkedAt is when the longest-waiting of them started waiting.
	OldestParkedAt time.Time
}

// LongPolls returns the long-poll pops parked on this broker now, grouped by queue,
// consumer group and partition, in that order, for queue only ("" = every queue). A
// namespace or task pop counts once on every queue it waits for. At most
// MaxLongPollGroups groups are returned; truncated reports that more exist.
func (b *Broker) LongPolls(queue string) (groups []LongPollGroup, truncated bool) {
	return b.waiters.groups(queue, MaxLongPollGroups)
}

// groups implements LongPolls with a cap of limit groups.
func (ws *waiters) groups(queue string, limit int) ([]LongPollGroup, bool) {
	type key struct{ queue, group, partition string }
	byKey := make(map[key]*LongPollGroup)
	ws.mu.Lock()
	for q, set := range ws.byQueue {
		if queue != "" && q != queue {
			continue
		}
		for w := range set {
			if !w.idle {
				continue
			}
			k := key{q, w.group, cmp.Or(w.partition, AnyPartition)}
			g := byKey[k]
			if g == nil {
				g = &LongPollGroup{Queue: k.queue, ConsumerGroup: k.group, Partition: k.partition,
					OldestParkedAt: w.parkedAt}
				byKey[k] = g
			}
			g.Count++
			if w.parkedAt.Before(g.OldestParkedAt) {
				g.OldestParkedAt = w.parkedAt
			}
		}
	}
	ws.mu.Unlock()
	out := make([]LongPollGroup, 0, len(byKey))
	for _, g := range byKey {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b LongPollGroup) int {
		return cmp.Or(cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.ConsumerGroup, b.ConsumerGroup),
			cmp.Compare(a.Partition, b.Partition))
	})
	if len(out) > limit {
		return out[:limit], true
	}
	return out, false
}
