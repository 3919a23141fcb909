package broker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// waiters wakes long-polls parked on queues when a push to one of them commits. A wake
// is a hint: a parked pop re-runs its claim; nothing is delivered through the channel.
// A waiter can be parked on several queues (a namespace/task pop).
//
// A push of this replica wakes only as many pops of each consumer group as it filled
// partitions (notifyPartitions): with many idle consumers, waking them all would cost a
// claim each for one winner. No message is left behind by the pops it did not wake: a
// woken pop whose claim finds messages passes a wake on to another pop of its group
// (the partition it was woken for may not be the one it took), and a pop that leaves
// with a wake it did not use passes that on. A chain of wakes ends at the first claim
// that finds nothing. Everything else (other replicas' notifications, a seek, a DLQ
// replay, a timer) wakes every pop of the queue.
type waiters struct {
	mu      sync.Mutex
	byQueue map[string]map[*waiter]struct{}
	claims  map[claimKey]*claimRun // claims in flight, of every pop of this broker

	// Claims run by parked pops, by cause and outcome.
	wokenFound, wokenEmpty, timedFound, timedEmpty atomic.Uint64
}

type waiter struct {
	wake   chan struct{}
	queues map[string]struct{} // guarded by waiters.mu
	// group and partition are the pop's consumer group and partition ("" = any);
	// parkedAt is when the pop started waiting. Set by park, read-only after.
	group     string
	partition string
	parkedAt  time.Time
	// idle is set while the pop waits for a wake or its timer, not while it claims
	// (guarded by waiters.mu): only idle pops count as parked.
	idle bool
	// wokeFor is the queue and partition the last wake of notifyPartitions was for;
	// empty after any other wake (guarded by waiters.mu).
	wokeFor struct{ queue, partition string }
	// owedWake marks the wake of a claim that a woken claim beside it left owed (see
	// claimEnd); its own empty claim owes nothing more (guarded by waiters.mu).
	owedWake bool
}

func newWaiters() *waiters {
	return &waiters{byQueue: make(map[string]map[*waiter]struct{}), claims: make(map[claimKey]*claimRun)}
}

// park registers a new waiter of a pop by group on partition ("" = any), parked since
// at, on queues; the caller must call unpark when done.
func (ws *waiters) park(group, partition string, at time.Time, queues ...string) *waiter {
	w := &waiter{wake: make(chan struct{}, 1), queues: make(map[string]struct{}),
		group: group, partition: partition, parkedAt: at}
	ws.add(w, queues...)
	return w
}

// add parks w on more queues.
func (ws *waiters) add(w *waiter, queues ...string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, q := range queues {
		if _, ok := w.queues[q]; ok {
			continue
		}
		set := ws.byQueue[q]
		if set == nil {
			set = make(map[*waiter]struct{})
			ws.byQueue[q] = set
		}
		set[w] = struct{}{}
		w.queues[q] = struct{}{}
	}
}

// unpark removes w from every queue it is parked on. A wake w got and did not use is
// passed on first.
func (ws *waiters) unpark(w *waiter) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	select {
	case <-w.wake:
		ws.passLocked(w)
	default:
	}
	for q := range w.queues {
		if set := ws.byQueue[q]; set != nil {
			delete(set, w)
			if len(set) == 0 {
				delete(ws.byQueue, q)
			}
		}
	}
	clear(w.queues)
}

// notify wakes every waiter parked on queue. Wakes coalesce: a waiter that has not
// yet consumed an earlier wake gets no second one.
func (ws *waiters) notify(queue string) {
	ws.mu.Lock()
	for w := range ws.byQueue[queue] {
		w.wokeFor.queue, w.wokeFor.partition = "", ""
		w.signal()
	}
	ws.mu.Unlock()
}

// notifyAll wakes every parked waiter (after wake-ups may have been lost).
func (ws *waiters) notifyAll() {
	ws.mu.Lock()
	for _, set := range ws.byQueue {
		for w := range set {
			w.wokeFor.queue, w.wokeFor.partition = "", ""
			w.signal()
		}
	}
	ws.mu.Unlock()
}

// notifyPartitions wakes the pops parked on queue that a push filling partitions (their
// names, each once) may serve: for each consumer group, one per partition — a pop
// parked on that partition if there is one, else one that takes any partition. A pop
// already holding a wake is not counted (its wake is an earlier push's); when only such
// pops are left, one of them is told that its wake is not only for its own partition
// (owesPassLocked), so that it passes a wake on after its claim finds messages.
func (ws *waiters) notifyPartitions(queue string, partitions []string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	set := ws.byQueue[queue]
	if len(set) <= len(partitions) {
		for w := range set {
			// One partition names what the wake is for, unless w holds an earlier one.
			w.wokeFor.queue, w.wokeFor.partition = "", ""
			if len(partitions) == 1 && len(w.wake) == 0 {
				w.wokeFor.queue, w.wokeFor.partition = queue, partitions[0]
			}
			w.signal()
		}
		return
	}
	type candidates struct {
		any, anyHeld     []*waiter
		exact, exactHeld map[string][]*waiter
	}
	byGroup := make(map[string]*candidates)
	for w := range set {
		c := byGroup[w.group]
		if c == nil {
			c = &candidates{exact: make(map[string][]*waiter), exactHeld: make(map[string][]*waiter)}
			byGroup[w.group] = c
		}
		held := len(w.wake) > 0
		switch {
		case w.partition == "" && held:
			c.anyHeld = append(c.anyHeld, w)
		case w.partition == "":
			c.any = append(c.any, w)
		case held:
			c.exactHeld[w.partition] = append(c.exactHeld[w.partition], w)
		default:
			c.exact[w.partition] = append(c.exact[w.partition], w)
		}
	}
	for _, c := range byGroup {
		for _, p := range partitions {
			var w *waiter
			switch on := c.exact[p]; {
			case len(on) > 0:
				w, c.exact[p] = on[len(on)-1], on[:len(on)-1]
			case len(c.any) > 0:
				w, c.any = c.any[len(c.any)-1], c.any[:len(c.any)-1]
			case len(c.exactHeld[p]) > 0:
				owesPassLocked(c.exactHeld[p][0])
				continue
			case len(c.anyHeld) > 0:
				owesPassLocked(c.anyHeld[0])
				continue
			default:
				continue
			}
			w.wokeFor.queue, w.wokeFor.partition = queue, p
			w.signal()
		}
	}
}

// owesPassLocked marks w, which holds a wake, as woken for more than the partition of
// that wake: whatever its claim takes, it passes a wake on (claimed).
func owesPassLocked(w *waiter) {
	w.wokeFor.queue, w.wokeFor.partition = "", ""
}

// notifyGroup wakes one pop of group parked on queue that can take partition (one
// parked on it, else one that takes any; partition "" when unknown: a pop that takes
// any). When every such pop already holds a wake, one of them owes a pass instead
// (see notifyPartitions).
func (ws *waiters) notifyGroup(queue, group, partition string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.notifyGroupLocked(queue, group, partition)
}

// notifyGroupLocked is notifyGroup; it returns the pop it woke, if any.
func (ws *waiters) notifyGroupLocked(queue, group, partition string) *waiter {
	var pick, held *waiter
	for w := range ws.byQueue[queue] {
		switch {
		case w.group != group || (w.partition != "" && w.partition != partition):
		case len(w.wake) > 0:
			held = w
		case pick == nil || w.partition != "":
			pick = w
		}
	}
	switch {
	case pick != nil:
		pick.wokeFor.queue, pick.wokeFor.partition = queue, partition
		pick.signal()
	case held != nil:
		owesPassLocked(held)
	}
	return pick
}

// claimed passes a wake on for a pop that was woken and found msgs on queue q, unless
// they include the partition its wake was for: then the wake was used (see waiters).
func (ws *waiters) claimed(w *waiter, q string, msgs []queue.Message) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w.wokeFor.queue == q && w.wokeFor.partition != "" {
		for i := range msgs {
			if msgs[i].Partition == w.wokeFor.partition {
				return
			}
		}
	}
	ws.passLocked(w)
}

// passLocked wakes one pop other than w, of w's group, on each queue w is parked on,
// that takes any partition or w's: one not already holding a wake, else one that does
// owes a pass (it claims anyway, and then passes on in its turn).
func (ws *waiters) passLocked(w *waiter) {
	for q := range w.queues {
		var held *waiter
		woke := false
		for o := range ws.byQueue[q] {
			if o == w || o.group != w.group || (o.partition != "" && o.partition != w.partition) {
				continue
			}
			if len(o.wake) > 0 {
				held = o
				continue
			}
			o.wokeFor.queue, o.wokeFor.partition = "", ""
			o.signal()
			woke = true
			break
		}
		if !woke && held != nil {
			owesPassLocked(held)
		}
	}
}

// recheck counts a claim of a parked pop: after a wake or its timer, and whether it
// found messages.
func (ws *waiters) recheck(woken, found bool) {
	switch {
	case woken && found:
		ws.wokenFound.Add(1)
	case woken:
		ws.wokenEmpty.Add(1)
	case found:
		ws.timedFound.Add(1)
	default:
		ws.timedEmpty.Add(1)
	}
}

func (w *waiter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// rest marks w idle (waiting for a wake or its timer) or not (claiming).
func (ws *waiters) rest(w *waiter, idle bool) {
	ws.mu.Lock()
	w.idle = idle
	ws.mu.Unlock()
}

// idleFor reports whether a pop of group parked on queue is waiting for a wake or its
// timer right now.
func (ws *waiters) idleFor(queue, group string) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.byQueue[queue] {
		if w.idle && w.group == group {
			return true
		}
	}
	return false
}

// count returns the number of parked long-polls.
func (ws *waiters) count() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	seen := make(map[*waiter]struct{})
	for _, set := range ws.byQueue {
		for w := range set {
			if w.idle {
				seen[w] = struct{}{}
			}
		}
	}
	return len(seen)
}

// parked returns the number of parked long-polls and how many are parked on each
// queue (a long-poll over several queues counts once in total and once per queue).
func (ws *waiters) parked() (total int, byQueue map[string]int) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	seen := make(map[*waiter]struct{})
	byQueue = make(map[string]int, len(ws.byQueue))
	for q, set := range ws.byQueue {
		for w := range set {
			if w.idle {
				byQueue[q]++
				seen[w] = struct{}{}
			}
		}
	}
	return len(seen), byQueue
}
