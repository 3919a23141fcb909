package cellsim

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
)

// Payload is the body of every message of the load: its tenant, partition index and
// sequence number within that partition.
type Payload struct {
	Tenant    string `json:"t"`
	Partition int    `json:"p"`
	Seq       int    `json:"s"`
}

// TransactionID is the message's transaction id: a retried push of it deduplicates.
func (p Payload) TransactionID() string {
	return p.Tenant + "-p" + strconv.Itoa(p.Partition) + "-" + strconv.Itoa(p.Seq)
}

// partitionName is the stored partition name of partition index i.
func partitionName(i int) string { return "p" + strconv.Itoa(i) }

// streamKey names one partition of one tenant.
type streamKey struct {
	tenant    string
	partition int
}

// groupKey is a partition as one consumer group sees it.
type groupKey struct {
	streamKey
	group string
}

// delivery is what one group knows of one message.
type delivery struct {
	count int  // deliveries so far
	acked bool // an ack of it was answered success
}

// groupState is what one group has received of one partition.
type groupState struct {
	seen  map[int]*delivery
	first int // messages delivered at least once: the next first delivery must be this one
}

// History records the load's pushes, deliveries and acks, and counts what breaks
// the guarantees as they come in. It is safe for concurrent use; the deliveries of
// one (partition, group) must be recorded in the order they were received, which
// they are when one goroutine consumes each tenant per group.
type History struct {
	mu     sync.Mutex
	pushed map[streamKey]int // sequences 0..n-1 answered queued or duplicate
	groups map[groupKey]*groupState
	counts Counts
}

// Counts are the checker's totals.
type Counts struct {
	// Pushed are the messages answered queued or duplicate; Consumed the (message,
	// group) pairs acked at least once.
	Pushed, Consumed int
	// Deliveries counts every delivery to every group.
	Deliveries int
	// Lost are (message, group) pairs pushed and never acked; Duplicated deliveries of
	// a message the group had acked; Redelivered deliveries of one it had received
	// without an ack known to have succeeded; OutOfOrder first deliveries made while
	// an older message of the same partition was not yet delivered to the group;
	// Foreign deliveries of another tenant's message; Unpushed deliveries of a
	// message whose push was never answered queued.
	Lost, Duplicated, Redelivered, OutOfOrder, Foreign, Unpushed int
	// AckFailed are acks answered with success false (an expired or unknown lease).
	AckFailed int
}

// NewHistory returns an empty history.
func NewHistory() *History {
	return &History{pushed: map[streamKey]int{}, groups: map[groupKey]*groupState{}}
}

// Pushed records that the push of p was answered queued (or duplicate). Sequences
// of one partition must be recorded in order, each once.
func (h *History) Pushed(p Payload) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := streamKey{p.Tenant, p.Partition}
	if h.pushed[k] != p.Seq {
		return fmt.Errorf("cellsim: push of %s recorded out of sequence (expected %d)", p.TransactionID(), h.pushed[k])
	}
	h.pushed[k]++
	h.counts.Pushed++
	return nil
}

// Delivered records that consumer of tenant, in group, received p.
func (h *History) Delivered(tenant, group string, p Payload) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts.Deliveries++
	if p.Tenant != tenant {
		h.counts.Foreign++
		return
	}
	g := h.state(groupKey{streamKey{p.Tenant, p.Partition}, group})
	d := g.seen[p.Seq]
	switch {
	case d == nil:
		if p.Seq != g.first {
			h.counts.OutOfOrder++
		}
		// A delivery may come before its push's answer (still on its way): Finish
		// counts the deliveries whose push was never answered queued.
		g.seen[p.Seq] = &delivery{count: 1}
		g.first++
	case d.acked:
		d.count++
		h.counts.Duplicated++
	default:
		d.count++
		h.counts.Redelivered++
	}
}

// Acked records the answer of an ack by group of p: ok is its success.
func (h *History) Acked(group string, p Payload, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !ok {
		h.counts.AckFailed++
		return
	}
	g := h.state(groupKey{streamKey{p.Tenant, p.Partition}, group})
	if d := g.seen[p.Seq]; d != nil && !d.acked {
		d.acked = true
		h.counts.Consumed++
	}
}

func (h *History) state(k groupKey) *groupState {
	g := h.groups[k]
	if g == nil {
		g = &groupState{seen: map[int]*delivery{}}
		h.groups[k] = g
	}
	return g
}

// Outstanding is the number of (message, group) pairs pushed and not yet acked.
func (h *History) Outstanding(groups []string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts.Pushed*len(groups) - h.counts.Consumed
}

// PushedOf returns how many messages of tenant were pushed, over its partitions.
func (h *History) PushedOf(tenant string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for k, v := range h.pushed {
		if k.tenant == tenant {
			n += v
		}
	}
	return n
}

// Finish counts what is lost (pushed, never acked by a group) and returns the
// totals, with up to ten examples of each loss.
func (h *History) Finish(groups []string) (Counts, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.counts
	var examples []string
	keys := make([]streamKey, 0, len(h.pushed))
	for k := range h.pushed {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].tenant != keys[j].tenant {
			return keys[i].tenant < keys[j].tenant
		}
		return keys[i].partition < keys[j].partition
	})
	for _, k := range keys {
		for _, g := range groups {
			st := h.groups[groupKey{k, g}]
			for s := range h.pushed[k] {
				if st != nil && st.seen[s] != nil && st.seen[s].acked {
					continue
				}
				c.Lost++
				if len(examples) < 10 {
					examples = append(examples, fmt.Sprintf("%s lost for group %s", Payload{k.tenant, k.partition, s}.TransactionID(), g))
				}
			}
		}
	}
	for gk, st := range h.groups {
		for s := range st.seen {
			if s >= h.pushed[gk.streamKey] {
				c.Unpushed++
			}
		}
	}
	return c, examples
}
