package broker

import (
	"context"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// MaxPopLeaseSeconds bounds a pop's leaseSeconds, the same bound as a lease
// extension's seconds: 7 days.
const MaxPopLeaseSeconds = 7 * 24 * 3600

// NormalizePop fills defaults and validates a pop request:
// batch must be 1..MaxPopBatch, the timeout is capped at MaxPopTimeout, LeaseSeconds
// at most MaxPopLeaseSeconds (0 or less: each queue's leaseTime). An omitted batch is
// DEFAULT_BATCH_SIZE, or with autopilot see normalizeAutopilot. A request without a
// queue must name a namespace and/or a task.
func (b *Broker) NormalizePop(req *queue.PopRequest) error {
	if req.Queue == "" && (req.Namespace != "" || req.Task != "") {
		if req.Partition != "" {
			return queue.Invalid("partition", "partition cannot be used when popping by namespace/task")
		}
		for field, v := range map[string]string{"namespace": req.Namespace, "task": req.Task} {
			if len(v) > queue.MaxNameLength {
				return queue.Invalid(field, "%s must be at most %d characters", field, queue.MaxNameLength)
			}
		}
	} else if err := queue.CheckName("queue", req.Queue); err != nil {
		return err
	}
	if req.Partition != "" {
		if err := queue.CheckName("partition", req.Partition); err != nil {
			return err
		}
	}
	if req.LeaseSeconds > MaxPopLeaseSeconds {
		return queue.Invalid("leaseSeconds", "leaseSeconds must be at most %d", MaxPopLeaseSeconds)
	}
	req.LeaseSeconds = max(req.LeaseSeconds, 0)
	b.normalizeAutopilot(req)
	if req.ConsumerGroup == "" {
		req.ConsumerGroup = queue.QueueModeGroup
	} else if err := queue.CheckName("consumerGroup", req.ConsumerGroup); err != nil {
		return err
	}
	if req.Batch == 0 {
		req.Batch = b.cfg.DefaultBatchSize
	}
	if req.Batch < 1 || req.Batch > b.cfg.MaxPopBatch {
		return queue.Invalid("batch", "batch must be between 1 and %d", b.cfg.MaxPopBatch)
	}
	if req.Partitions < 1 {
		req.Partitions = 1
	}
	if req.Timeout < 0 {
		return queue.Invalid("timeout", "timeout must not be negative")
	}
	if req.Timeout == 0 {
		req.Timeout = b.cfg.DefaultTimeout
	}
	req.Timeout = min(req.Timeout, b.cfg.MaxPopTimeout)
	if req.SubscriptionMode == "" {
		req.SubscriptionMode = b.cfg.DefaultSubscriptionMode
	}
	switch strings.ToLower(req.SubscriptionMode) {
	case "new-only", "new_only", "newonly": // the spellings DEFAULT_SUBSCRIPTION_MODE reads as new
		req.SubscriptionMode = "new"
	}
	return nil
}

// parkStopKey is the context key of a pop's stop signal (WithParkStop).
type parkStopKey struct{}

// WithParkStop returns ctx carrying stop: a Pop under it that waits for messages ends
// with its empty answer once stop is closed. Unlike cancelling ctx, closing stop never
// abandons a claim in progress: a claim that has run is answered with its messages, so
// no lease is left taken for an answer that was never sent.
func WithParkStop(ctx context.Context, stop <-chan struct{}) context.Context {
	return context.WithValue(ctx, parkStopKey{}, stop)
}

// Pop claims messages for req (already normalised by NormalizePop). With Wait it
// parks until messages arrive, the timeout passes, the client goes away (ctx), its
// stop signal closes (WithParkStop) or the broker closes; parked pops hold no
// database connection. An empty result is not an
// error. All attempts of one request share one lease id. While pops are paused
// (pop maintenance mode), every pop is answered empty at once, parked ones included.
func (b *Broker) Pop(ctx context.Context, req queue.PopRequest) (res queue.PopResult, err error) {
	res = queue.PopResult{Queue: req.Queue, ConsumerGroup: req.ConsumerGroup}
	defer func() { b.analytics.RecordPop(time.Now(), req, res, err) }()
	if req.Arrived.IsZero() {
		req.Arrived = time.Now()
	}
	if _, pop := b.pauseFlags(ctx); pop {
		res.Paused = true
		return res, nil // pops paused: every pop is answered empty at once
	}
	if b.takeAhead(ctx, req, &res) {
		return res, nil // a batch its consumer's ack claimed ahead
	}
	if req.AutopilotPartitions {
		width := b.autopilot.start(req.Queue, req.ConsumerGroup)
		req.Partitions = width
		defer func() {
			b.autopilot.finish(req.Queue, req.ConsumerGroup, width, res.PartitionsClaimed, len(res.Messages) < req.Batch)
		}()
	}
	if req.AutopilotBatch || req.AutopilotPartitions {
		res.Autopilot = &queue.PopAutopilot{Partitions: req.Partitions, Batch: req.Batch}
	}
	leaseID := b.ids.New()
	deadline := time.Now().Add(req.Timeout)

	stop, _ := ctx.Value(parkStopKey{}).(<-chan struct{}) // nil without one: never ready
	var w *waiter
	if req.Wait {
		w = b.waiters.park(req.ConsumerGroup, req.Partition, time.Now())
		defer func() {
			if w != nil { // nil: a claim cut at the deadline unparks it when it ends
				b.waiters.unpark(w)
			}
		}()
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for empty, parked, woken := 0, false, false; ; {
		var paused <-chan struct{} // nil without Wait: never ready
		if req.Wait {
			paused = b.pause.popPausedSignal()
		}
		if _, pop := b.Paused(); pop {
			res.Paused = true
			return res, nil // paused while parked: answered empty at once
		}
		if ctx.Err() != nil {
			return res, ctx.Err() // gone before the claim: nothing to give back
		}
		claim, from, cut, err := b.popAttemptBy(ctx, req, leaseID, w, woken, deadline)
		if cut {
			w = nil // the claim still running unparks it
			return res, nil
		}
		msgs := claim.Messages
		res.Conflation, res.ConflationConflict = claim.Conflation, claim.ConflationConflict
		if claim.Conflation {
			res.Autopilot = nil // the controller does not size a conflating pop
		}
		if ctx.Err() != nil {
			// The client went away while the claim ran (a statement cancelled late has
			// committed): the answer reaches no one, so the lease goes back. An autoAck
			// claim has moved its cursor already: at most once, as when a consumer
			// crashes after its answer.
			if !req.AutoAck {
				b.giveBackLease(leaseID)
			}
			return res, ctx.Err()
		}
		if err != nil {
			return res, err
		}
		if parked {
			b.waiters.recheck(woken, len(msgs) > 0)
			if woken && len(msgs) > 0 {
				b.waiters.claimed(w, from, msgs)
			}
		}
		if len(msgs) > 0 {
			for i := range msgs {
				msgs[i].Payload = b.OpenPayload(msgs[i].Payload)
			}
			res.Queue = from
			res.Messages = msgs
			if !req.AutoAck {
				res.LeaseID = leaseID
				if b.ahead.eligible(req) && len(msgs) == req.Batch && !claim.Conflation {
					b.ahead.popped(leaseID, req, time.Now())
				}
			}
			res.PartitionsClaimed = countPartitions(msgs)
			if res.Autopilot != nil && len(msgs) < req.Batch {
				// What was there is drained: advise the first long-poll re-check interval
				// before the next poll, should it be empty and not wait.
				res.Autopilot.WaitMs = int(b.cfg.PopWaitInitialInterval.Milliseconds())
			}
			return res, nil
		}
		remaining := time.Until(deadline)
		if !req.Wait || remaining <= 0 || b.isClosing() {
			return res, nil
		}
		empty++
		wait := min(b.backoff(empty), remaining)
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		parked, woken = true, false
		b.waiters.rest(w, true)
		var end bool
		var endErr error
		select {
		case <-ctx.Done():
			end, endErr = true, ctx.Err()
		case <-b.closing:
			end = true
		case <-stop:
			end = true
		case <-paused:
		case <-w.wake:
			empty, woken = 0, true
		case <-timer.C:
		}
		b.waiters.rest(w, false)
		if end {
			return res, endErr
		}
		timer.Stop()
	}
}

// popAttemptBy runs popAttempt, and answers cut at the long-poll's deadline when the
// claim has not ended by then (a database that does not answer): the pop is answered
// empty at its own deadline, as the client asked, while the claim runs to its end
// apart; it then gives back any lease it took (no one got its messages) and unparks w.
// A pop that does not wait, an autoAck pop (its claim consumes what it takes) and one
// already past its deadline wait for the claim.
func (b *Broker) popAttemptBy(ctx context.Context, req queue.PopRequest, leaseID string, w *waiter, woken bool,
	deadline time.Time) (claim queue.Claim, from string, cut bool, err error) {
	remaining := time.Until(deadline)
	if !req.Wait || req.AutoAck || remaining <= 0 {
		claim, from, err = b.popAttempt(ctx, req, leaseID, w, woken)
		return claim, from, false, err
	}
	type attempt struct {
		claim queue.Claim
		from  string
		err   error
	}
	done := make(chan attempt, 1)
	go func() {
		c, f, err := b.popAttempt(ctx, req, leaseID, w, woken)
		done <- attempt{c, f, err}
	}()
	t := time.NewTimer(remaining)
	defer t.Stop()
	select {
	case a := <-done:
		return a.claim, a.from, false, a.err
	case <-t.C:
	}
	go func() {
		a := <-done
		if a.err == nil && len(a.claim.Messages) > 0 {
			b.giveBackLease(leaseID)
		}
		b.waiters.unpark(w)
	}()
	return queue.Claim{}, "", true, nil
}

// popAttempt runs one claim. For a namespace/task pop it walks the matching queues,
// highest priority first, until one yields messages, and parks w (when waiting) on
// each of them so a push to any wakes it. Conflation is echoed as the group's policy on
// the queue that answered, or, when none did, on any queue walked; a conflict, when
// any queue walked had one. A claim runs to its end even when ctx is
// cancelled meanwhile (the client went away): a statement abandoned on the broker's
// side may still commit on the database's, and only a claim whose outcome is known
// can be given back. woken tells whether a wake started this attempt (see claims.go).
func (b *Broker) popAttempt(ctx context.Context, req queue.PopRequest, leaseID string, w *waiter, woken bool) (queue.Claim, string, error) {
	claimCtx := context.WithoutCancel(ctx)
	claim := func(one queue.PopRequest) (queue.Claim, error) {
		token := b.waiters.claimBegin(one.Queue, one.ConsumerGroup)
		c, err := b.store.Claim(claimCtx, one, leaseID)
		b.waiters.claimEnd(one.Queue, one.ConsumerGroup, token, len(c.Messages) > 0, w, woken)
		return c, err
	}
	if req.Queue != "" {
		if w != nil {
			b.waiters.add(w, req.Queue)
		}
		c, err := claim(req)
		return c, req.Queue, err
	}
	names, err := b.store.QueueNamesByTag(ctx, req.Scope, req.Namespace, req.Task)
	if err != nil {
		return queue.Claim{}, "", err
	}
	if w != nil {
		b.waiters.add(w, names...)
	}
	// A pop asking for conflation where no queue matches yet is answered as applied,
	// as a pop of a queue that does not exist yet is.
	said := queue.Claim{Conflation: len(names) == 0 && req.Conflation != nil && *req.Conflation}
	for _, name := range names {
		if ctx.Err() != nil {
			return said, "", ctx.Err()
		}
		one := req
		one.Queue = name
		c, err := claim(one)
		said.Conflation = said.Conflation || c.Conflation
		said.ConflationConflict = said.ConflationConflict || c.ConflationConflict
		if err != nil || len(c.Messages) > 0 {
			// The messages of one queue: conflated or not as its group's policy says.
			said.Messages, said.Conflation = c.Messages, c.Conflation
			return said, name, err
		}
	}
	return said, "", nil
}

// backoff is upstream's re-check schedule: the initial interval
// for the first threshold empty attempts, then initial × k × multiplier, capped. The
// product is capped before it becomes a Duration: a huge multiplier would overflow it
// into a negative interval, and a parked pop would re-check without pause.
func (b *Broker) backoff(k int) time.Duration {
	if k <= b.cfg.PopWaitBackoffThreshold {
		return b.cfg.PopWaitInitialInterval
	}
	d := float64(b.cfg.PopWaitInitialInterval) * float64(k) * b.cfg.PopWaitBackoffMultiple
	if d >= float64(b.cfg.PopWaitMaxInterval) {
		return b.cfg.PopWaitMaxInterval
	}
	return time.Duration(d)
}

// giveBackLease clears the leases a pop took under leaseID for an answer no one
// received, so the partitions are claimable at once instead of after their lease
// time. It runs on its own bounded context: the pop's is done.
func (b *Broker) giveBackLease(leaseID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.store.LeaseGiveBack(ctx, leaseID); err != nil {
		b.logger.Warn("giving back the lease of an abandoned pop", "lease", leaseID, "err", err)
	}
}

func (b *Broker) isClosing() bool {
	select {
	case <-b.closing:
		return true
	default:
		return false
	}
}

func countPartitions(msgs []queue.Message) int {
	n, last := 0, ""
	for _, m := range msgs {
		if m.PartitionID != last {
			n++
			last = m.PartitionID
		}
	}
	return n
}
