package broker

import "time"

// A push that fills a partition wakes a pop parked for it; if that partition is leased
// by a batch whose ack is running, the woken claim finds nothing and the pop parks
// again. The ack's own statement may not see the push either (its snapshot was taken
// before the push committed), so it answers that it left nothing and wakes no one: the
// pushed messages would wait for a parked pop's re-check interval. So a woken claim that
// found nothing is remembered for a short while, and an ack of that group that ends a
// lease on that partition wakes a parked pop even when it saw nothing left. A spare wake
// costs one empty claim.

const (
	// unservedMaxAge is how long a woken claim that found nothing is remembered: far
	// longer than an ack's statement takes, far shorter than the re-check intervals.
	unservedMaxAge = 5 * time.Second
	// unservedMax bounds the wakes remembered; past it, new ones are dropped (those
	// pops fall back to their re-check interval).
	unservedMax = 4096
)

type unservedKey struct{ queue, group, partition string }

// unservedWake remembers that w, woken for one partition, claimed nothing.
func (ws *waiters) unservedWake(w *waiter) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w.wokeFor.partition == "" || !w.wokeByPush {
		// Woken for a whole queue, or by an ack or a pass (remembering those would let
		// every later ack of the partition wake a pop for nothing, each wake begetting
		// the next).
		return
	}
	now := time.Now()
	if len(ws.unserved) >= unservedMax {
		for k, at := range ws.unserved {
			if now.Sub(at) > unservedMaxAge {
				delete(ws.unserved, k)
			}
		}
		if len(ws.unserved) >= unservedMax {
			return
		}
	}
	ws.unserved[unservedKey{w.wokeFor.queue, w.group, w.wokeFor.partition}] = now
}

// takeUnserved reports, and forgets, whether a pop of group woken for partition of
// queue claimed nothing within unservedMaxAge.
func (ws *waiters) takeUnserved(queue, group, partition string) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if len(ws.unserved) == 0 {
		return false
	}
	k := unservedKey{queue, group, partition}
	at, ok := ws.unserved[k]
	if !ok {
		return false
	}
	delete(ws.unserved, k)
	return time.Since(at) <= unservedMaxAge
}
