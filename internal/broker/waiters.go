package broker

import "sync"

// waiters wakes long-polls parked on a queue when a push to it commits. A wake is a
// hint: a parked pop re-runs its claim; nothing is delivered through the channel.
type waiters struct {
	mu      sync.Mutex
	byQueue map[string]map[*waiter]struct{}
}

type waiter struct {
	wake chan struct{}
}

func newWaiters() *waiters {
	return &waiters{byQueue: make(map[string]map[*waiter]struct{})}
}

// park registers a waiter on queue; the caller must call unpark when done.
func (ws *waiters) park(queue string) *waiter {
	w := &waiter{wake: make(chan struct{}, 1)}
	ws.mu.Lock()
	set := ws.byQueue[queue]
	if set == nil {
		set = make(map[*waiter]struct{})
		ws.byQueue[queue] = set
	}
	set[w] = struct{}{}
	ws.mu.Unlock()
	return w
}

func (ws *waiters) unpark(queue string, w *waiter) {
	ws.mu.Lock()
	if set := ws.byQueue[queue]; set != nil {
		delete(set, w)
		if len(set) == 0 {
			delete(ws.byQueue, queue)
		}
	}
	ws.mu.Unlock()
}

// notify wakes every waiter parked on queue. Wakes coalesce: a waiter that has not
// yet consumed an earlier wake gets no second one.
func (ws *waiters) notify(queue string) {
	ws.mu.Lock()
	for w := range ws.byQueue[queue] {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	ws.mu.Unlock()
}

// notifyAll wakes every parked waiter (after wake-ups may have been lost).
func (ws *waiters) notifyAll() {
	ws.mu.Lock()
	for _, set := range ws.byQueue {
		for w := range set {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
	ws.mu.Unlock()
}

// count returns the number of parked long-polls.
func (ws *waiters) count() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	n := 0
	for _, set := range ws.byQueue {
		n += len(set)
	}
	return n
}
