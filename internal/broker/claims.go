package broker

// Claims in flight. A wildcard claim skips a partition whose ready row another claim
// of its group holds (SKIP LOCKED) rather than wait for it, so a pop woken for a
// pushed partition finds nothing while a claim beside it holds that partition. When
// that claim then leaves the partition's messages where they are (it read the
// partition just before the push committed, or could not take it), no pop is awake
// for them: the chain of wakes ended at the woken pop's empty claim. So when a woken
// claim and a claim of the same group on the same queue beside it both find nothing,
// whichever ends last wakes a parked pop of the group. The pop woken that way owes
// nothing more when its own claim finds nothing, so this costs at most one claim per
// such pair, never a chain of them. Left to the re-check interval: a claim beside it
// that took messages of another partition and left the woken one's (rarer still: it
// found that partition empty just before the push committed, then found another), and
// claims on other replicas, which are not seen here.

// claimKey names the claims of one consumer group on one queue.
type claimKey struct{ queue, group string }

// claimRun is what the broker knows of a group's claims on a queue while any runs.
type claimRun struct {
	running   int    // claims in flight
	emptyEnds uint64 // claims that ended with nothing since the first of them began
	owed      bool   // a woken claim found nothing while others ran
	partition string // the partition that claim was woken for
}

// claimBegin records a claim of group on queue; the token it returns goes to claimEnd.
func (ws *waiters) claimBegin(queue, group string) uint64 {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	k := claimKey{queue, group}
	r := ws.claims[k]
	if r == nil {
		r = &claimRun{}
		ws.claims[k] = r
	}
	r.running++
	return r.emptyEnds
}

// claimEnd records the end of a claim begun with token, found telling whether it took
// messages, and wakes a parked pop of the group when a wake may have been lost (see
// above). w is the claiming pop's waiter (nil for a pop that does not wait), woken
// whether a wake started this claim.
func (ws *waiters) claimEnd(queue, group string, token uint64, found bool, w *waiter, woken bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	k := claimKey{queue, group}
	r := ws.claims[k]
	if r == nil {
		return
	}
	r.running--
	// A namespace pop's wake names the queue it was for; others name none.
	woken = woken && w != nil && (w.wokeFor.queue == "" || w.wokeFor.queue == queue)
	if !found {
		if r.owed { // a claim beside the woken one that found nothing ended with nothing
			r.owed = false
			ws.wakeOwedLocked(queue, group, r.partition)
		}
		if woken && !w.owedWake {
			switch {
			case r.emptyEnds > token: // one ended with nothing during this claim
				ws.wakeOwedLocked(queue, group, w.wokeFor.partition)
			case r.running > 0:
				r.owed, r.partition = true, w.wokeFor.partition
			}
		}
		r.emptyEnds++
	}
	if woken {
		w.owedWake = false // the owed wake, if it was one, is used
	}
	if r.running == 0 {
		delete(ws.claims, k) // an owed wake whose claims beside it all took messages lapses
	}
}

// wakeOwedLocked wakes a parked pop of group on queue for partition ("" for any),
// marked so that its claim, if empty, owes no further wake.
func (ws *waiters) wakeOwedLocked(queue, group, partition string) {
	if w := ws.notifyGroupLocked(queue, group, partition); w != nil {
		w.owedWake = true
	}
}
