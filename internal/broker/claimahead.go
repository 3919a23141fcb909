package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// Claiming ahead (QUEEN_POP_CLAIM_AHEAD_MS): a consumer in a loop acks its batch and
// pops the next one at once, and each of the two waits for a commit's WAL flush. When
// a consumer takes full batches and came back within the window after its previous
// ack, and no pop of its group is parked on this broker (which would take the next
// batch as soon as it is there), the ack that releases its lease also claims its next
// batch, in the ack's own transaction (one commit, one flush), under a new lease; the
// consumer's next pop with the same parameters takes that batch without a database
// round trip. A batch no pop takes within the window is given back (its lease
// cleared, a parked pop woken), and so is every batch held for a queue and group when
// any other pop of that queue and group arrives (before that pop claims), and around a
// seek or a delete of the group or the queue: a pop on this replica does not find
// messages held for no one. Held batches are leased like any other, and the window
// counts from when the ack was sent, not from its commit: the lease starts in the
// ack's transaction, so a pop takes a held batch at most the window after its lease
// began, however long the ack waited for a lock or a flush.

// aheadKey is what a pop must match to take a batch claimed ahead: the parameters
// that decide what its own claim would have taken.
type aheadKey struct {
	scope                      queue.Scope
	queue, partition, group    string
	mode, from                 string
	batch, width, leaseSeconds int
}

func aheadKeyOf(r queue.PopRequest) aheadKey {
	return aheadKey{scope: r.Scope, queue: r.Queue, partition: r.Partition, group: r.ConsumerGroup,
		mode: r.SubscriptionMode, from: r.SubscriptionFrom, batch: r.Batch, width: r.Partitions, leaseSeconds: r.LeaseSeconds}
}

// aheadLease is a lease a pop of this replica took: the pop, whether its consumer was
// looping (it came within the window after its previous ack), and when.
type aheadLease struct {
	req     queue.PopRequest
	looping bool
	at      time.Time
}

// heldBatch is a batch claimed ahead, waiting for its pop.
type heldBatch struct {
	key   aheadKey
	lease string
	msgs  []queue.Message
	// deadline is the window after the ack was sent: no pop takes the batch later.
	deadline time.Time
	timer    *time.Timer
}

// aheadTracked bounds the leases and keys claimAhead remembers: past it, entries older
// than aheadForget go, and if that is not enough new ones are not remembered (their
// acks then claim nothing ahead).
const (
	aheadTracked = 4096
	aheadForget  = time.Minute
)

// claimAhead keeps the state of claiming ahead. Its zero window turns it off.
type claimAhead struct {
	window time.Duration

	mu     sync.Mutex
	leases map[string]aheadLease // lease id → the pop that took it
	acked  map[aheadKey]time.Time
	held   map[aheadKey][]*heldBatch
	// gen counts the drops (dropped, all): an ack that began before one holds nothing.
	gen uint64
	// swept is when leases was last swept for old entries (at most once a second).
	swept time.Time

	taken, givenBack atomic.Uint64
}

func newClaimAhead(window time.Duration) *claimAhead {
	return &claimAhead{window: window, leases: map[string]aheadLease{}, acked: map[aheadKey]time.Time{},
		held: map[aheadKey][]*heldBatch{}}
}

// eligible reports whether a pop like req may take or cause a batch claimed ahead: it
// names a queue and no partition, claims one partition, leases what it takes (no
// autoAck), chooses its own batch (no autopilot, which changes it from pop to pop) and
// asks nothing of conflation (a conflating group's newest message is read when its pop
// comes). Only a pop that names no partition claims without ever waiting for a lock (it skips
// what others hold), which the claim needs inside an ack's transaction: a pop of a
// named partition waits for the pops of its group claiming it, and two acks claiming
// one partition that way could wait for each other.
func (c *claimAhead) eligible(req queue.PopRequest) bool {
	return c.window > 0 && req.Queue != "" && req.Partition == "" && req.Partitions <= 1 && !req.AutoAck &&
		!req.Autopilot && !req.AutopilotBatch && !req.AutopilotPartitions && req.Conflation == nil
}

// popped remembers that the pop req took a full batch under lease, for its ack.
func (c *claimAhead) popped(lease string, req queue.PopRequest, now time.Time) {
	key := aheadKeyOf(req)
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.acked[key]
	arrived := req.Arrived
	if arrived.IsZero() {
		arrived = now
	}
	looping := ok && arrived.Sub(last) <= c.window
	if len(c.leases) >= aheadTracked {
		// Leases acked elsewhere (another replica, a transaction) or never stay until
		// swept; a sweep walks them all, so at most once a second.
		if now.Sub(c.swept) >= time.Second {
			c.swept = now
			for id, l := range c.leases {
				if now.Sub(l.at) > aheadForget {
					delete(c.leases, id)
				}
			}
		}
		if len(c.leases) >= aheadTracked {
			return
		}
	}
	c.leases[lease] = aheadLease{req: req, looping: looping, at: now}
}

// lookup returns the pop that took lease, if a pop of this replica did and took a
// full batch; ahead tells whether its ack should claim the next batch.
func (c *claimAhead) lookup(lease string) (req queue.PopRequest, known, ahead bool) {
	if c.window <= 0 || lease == "" {
		return req, false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.leases[lease]
	return l.req, ok, ok && l.looping
}

// released forgets lease, which an ack released at now, and records when the pops
// like req that took it were last acked.
func (c *claimAhead) released(lease string, req queue.PopRequest, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.leases, lease)
	if len(c.acked) >= aheadTracked {
		for k, at := range c.acked {
			if now.Sub(at) > c.window {
				delete(c.acked, k)
			}
		}
		if len(c.acked) >= aheadTracked {
			return
		}
	}
	c.acked[aheadKeyOf(req)] = now
}

// generation returns the count of drops so far, for hold.
func (c *claimAhead) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// hold keeps hb for its pop; giveBack runs at its deadline unless a pop took it. It
// keeps nothing, and returns false, when the deadline has passed (the ack took the
// whole window), or when a drop came after gen was read: what the ack claimed may
// predate a seek or a delete.
func (c *claimAhead) hold(hb *heldBatch, gen uint64, giveBack func(*heldBatch)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	left := time.Until(hb.deadline)
	if c.gen != gen || left <= 0 {
		return false
	}
	c.held[hb.key] = append(c.held[hb.key], hb)
	hb.timer = time.AfterFunc(left, func() {
		if c.remove(hb) {
			giveBack(hb)
		}
	})
	return true
}

// remove takes hb out of the held batches; false if a pop took it, or it was removed
// already.
func (c *claimAhead) remove(hb *heldBatch) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	list := c.held[hb.key]
	for i, h := range list {
		if h == hb {
			c.setHeld(hb.key, append(list[:i:i], list[i+1:]...))
			return true
		}
	}
	return false
}

func (c *claimAhead) setHeld(key aheadKey, list []*heldBatch) {
	if len(list) == 0 {
		delete(c.held, key)
		return
	}
	c.held[key] = list
}

// take hands the oldest batch held for a pop like req to it, or nil.
func (c *claimAhead) take(req queue.PopRequest) *heldBatch {
	key := aheadKeyOf(req)
	c.mu.Lock()
	defer c.mu.Unlock()
	list := c.held[key]
	if len(list) == 0 {
		return nil
	}
	hb := list[0]
	c.setHeld(key, list[1:])
	hb.timer.Stop()
	return hb
}

// others takes out the batches held for req's group under other parameters, on req's
// queue (every queue for a pop by namespace or task): its own claim must see their
// partitions. A pop that cannot take a batch (not eligible) takes out all of them.
// Queue and group names are stored names, a tenant's prefix included.
func (c *claimAhead) others(req queue.PopRequest) []*heldBatch {
	key, own := aheadKeyOf(req), c.eligible(req)
	return c.takeOut(func(k aheadKey) bool {
		return k.group == key.group && (key.queue == "" || k.queue == key.queue) &&
			(!own || k != key)
	}, false)
}

// dropped takes out the batches held for queueName ("" = every queue) and group
// ("" = every group), after or before a seek, a group's or queue's delete changed
// what they should hold; and makes every ack in flight hold nothing.
func (c *claimAhead) dropped(queueName, group string) []*heldBatch {
	return c.takeOut(func(k aheadKey) bool {
		return (queueName == "" || k.queue == queueName) && (group == "" || k.group == group)
	}, true)
}

// all takes out every held batch (the broker is closing).
func (c *claimAhead) all() []*heldBatch {
	return c.takeOut(func(aheadKey) bool { return true }, true)
}

// takeOut removes the held batches whose key matches, stopping their timers; bump
// makes every ack in flight hold nothing.
func (c *claimAhead) takeOut(match func(aheadKey) bool, bump bool) []*heldBatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bump {
		c.gen++
	}
	var out []*heldBatch
	for k, list := range c.held {
		if match(k) {
			out = append(out, list...)
			delete(c.held, k)
		}
	}
	for _, hb := range out {
		hb.timer.Stop()
	}
	return out
}

// ClaimsAhead counts the batches acks claimed ahead: taken by a pop, or given back.
type ClaimsAhead struct {
	Taken, GivenBack uint64
}

// ClaimsAhead reports the batches this broker's acks claimed ahead.
func (b *Broker) ClaimsAhead() ClaimsAhead {
	return ClaimsAhead{Taken: b.ahead.taken.Load(), GivenBack: b.ahead.givenBack.Load()}
}

// ackClaimingAhead applies send, the acks of one group, and claims the next batch for
// the pop req that took their lease: the store claims only when send is the ack of a
// pop that released the lease. The batch is held for req's next pop; claimed names its
// partition ("" when nothing was claimed).
//
// Like a pop's claim, it runs to its end when the client leaves meanwhile: only a
// claim whose outcome is known can be given back. When the outcome is not known (an
// error), the new lease is given back anyway, which is harmless if nothing took it.
func (b *Broker) ackClaimingAhead(ctx context.Context, group string, send []queue.Ack,
	req queue.PopRequest) (got []queue.AckResult, claimed string, err error) {
	req.Wait, req.Arrived = false, time.Now()
	deadline := req.Arrived.Add(b.ahead.window) // before the claim's transaction begins
	lease := b.ids.New()
	gen := b.ahead.generation()
	token := b.waiters.claimBegin(req.Queue, req.ConsumerGroup)
	got, c, err := b.store.MessageAckClaim(context.WithoutCancel(ctx), group, send, req, lease)
	msgs := c.Messages
	b.waiters.claimEnd(req.Queue, req.ConsumerGroup, token, len(msgs) > 0, nil, false)
	if err != nil || c.Conflation {
		// A group whose policy became conflation (deleted and popped again with it)
		// is served by its pops: a value claimed now may be stale by then.
		b.giveBackLease(lease)
		if err == nil && len(msgs) > 0 {
			b.wakeFreed(req.Queue, req.ConsumerGroup, msgs[0].Partition)
		}
		return got, "", err
	}
	if len(msgs) > 0 {
		claimed = msgs[0].Partition // one partition: the pop names none and claims one
		hb := &heldBatch{key: aheadKeyOf(req), lease: lease, msgs: msgs, deadline: deadline}
		if !b.ahead.hold(hb, gen, b.giveBackHeld) {
			b.giveBackHeld(hb) // the window passed, or a seek or a delete came, while the ack ran
		} else if b.isClosing() { // Close may have given back the held batches before this one
			b.giveBackAllHeld()
		}
	}
	return got, claimed, nil
}

// takeAhead answers req with a batch claimed ahead for it, if one is held; before a
// pop that finds none (or may take none), the batches held for its queue and group
// under other parameters are given back.
func (b *Broker) takeAhead(ctx context.Context, req queue.PopRequest, res *queue.PopResult) bool {
	if b.ahead.window <= 0 {
		return false
	}
	var hb *heldBatch
	if b.ahead.eligible(req) {
		hb = b.ahead.take(req)
	}
	if hb != nil && !time.Now().Before(hb.deadline) {
		b.giveBackHeld(hb) // its timer is late: the window has passed
		hb = nil
	}
	if hb == nil {
		for _, o := range b.ahead.others(req) {
			b.giveBackHeld(o)
		}
		return false
	}
	if ctx.Err() != nil {
		b.giveBackHeld(hb) // the client left: the batch goes back
		return false
	}
	b.ahead.taken.Add(1)
	for i := range hb.msgs {
		hb.msgs[i].Payload = b.OpenPayload(hb.msgs[i].Payload)
	}
	res.Messages, res.LeaseID, res.PartitionsClaimed = hb.msgs, hb.lease, countPartitions(hb.msgs)
	if len(hb.msgs) == req.Batch {
		b.ahead.popped(hb.lease, req, time.Now())
	}
	return true
}

// giveBackHeld clears the lease of a batch claimed ahead that no pop took, and wakes
// a pop parked for its partitions. It is counted once the lease is cleared, so that
// whoever reads the count finds the batch claimable.
func (b *Broker) giveBackHeld(hb *heldBatch) {
	b.giveBackLease(hb.lease)
	b.ahead.givenBack.Add(1)
	last := ""
	for _, m := range hb.msgs {
		if m.Partition != last {
			last = m.Partition
			b.wakeFreed(hb.key.queue, hb.key.group, m.Partition)
		}
	}
}

// dropHeld gives back the batches held for queueName ("" = every queue) and group
// ("" = every group): a seek or a delete is changing what they should hold.
func (b *Broker) dropHeld(queueName, group string) {
	if b.ahead.window <= 0 {
		return
	}
	for _, hb := range b.ahead.dropped(queueName, group) {
		b.giveBackHeld(hb)
	}
}

// giveBackAllHeld gives back every batch held (the broker is closing).
func (b *Broker) giveBackAllHeld() {
	for _, hb := range b.ahead.all() {
		b.giveBackHeld(hb)
	}
}
