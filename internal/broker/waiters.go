package broker

import (
	"sync"
	"time"
)

// waiters wakes long-polls parked on queues when a push to one of them commits. A wake
// is a hint: a parked pop re-runs its claim; nothing is delivered through the channel.
// A waiter can be parked on several queues (a namespace/task pop).
type waiters struct {
	mu      sync.Mutex
	byQueue map[string]map[*waiter]struct{}
}

type waiter struct {
	wake   chan struct{}
	queues map[string]struct{} // guarded by waiters.mu
	// group and partition are the pop's consumer group and partition ("" = any);
	// parkedAt is when the pop started waiting. Set by park, read-only after.
	group     string
	partition string
	parkedAt  time.Time
}

func newWaiters() *waiters {
	return &waiters{byQueue: make(map[string]map[*waiter]struct{})}
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

// unpark removes w from every queue it is parked on.
func (ws *waiters) unpark(w *waiter) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
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
		w.signal()
	}
	ws.mu.Unlock()
}

// notifyAll wakes every parked waiter (after wake-ups may have been lost).
func (ws *waiters) notifyAll() {
	ws.mu.Lock()
	for _, set := range ws.byQueue {
		for w := range set {
			w.signal()
		}
	}
	ws.mu.Unlock()
}

func (w *waiter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// count returns the number of parked long-polls.
func (ws *waiters) count() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	seen := make(map[*waiter]struct{})
	for _, set := range ws.byQueue {
		for w := range set {
			seen[w] = struct{}{}
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
		if len(set) > 0 {
			byQueue[q] = len(set)
		}
		for w := range set {
			seen[w] = struct{}{}
		}
	}
	return len(seen), byQueue
}
