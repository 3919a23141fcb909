package checker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// errBadAnswer stands for an answer that cannot be matched to the request.
var errBadAnswer = errors.New("answer does not match the request")

// consumer is one consumer of one group. It records into its own slices (merged by
// run.history); episode indices are local until then.
type consumer struct {
	r         *run
	id, group int
	home      int // preferred broker
	awayUntil time.Duration
	rng       *rand.Rand

	episodes   []Episode
	deliveries []Delivery
}

// planned is one ack the consumer is about to send.
type planned struct {
	d      int // index in c.deliveries
	failed bool
}

func (c *consumer) groupParam() string {
	if g := c.r.groups[c.group]; g != queueModeGroup {
		return g
	}
	return "" // queue mode: no consumerGroup parameter, as clients do
}

// broker picks the broker for the next request: home, unless it failed lately.
func (c *consumer) broker() int {
	if c.r.since() < c.awayUntil {
		return (c.home + 1) % len(c.r.clients)
	}
	return c.home
}

// failed notes a transport error on broker b.
func (c *consumer) failed(b int) {
	if b == c.home {
		c.awayUntil = c.r.since() + 500*time.Millisecond
	}
}

func (c *consumer) loop(ctx context.Context) {
	r, cfg := c.r, c.r.cfg
	for !r.stop.Load() && ctx.Err() == nil {
		o := client.PopOptions{Queue: cfg.Queue, ConsumerGroup: c.groupParam(), Batch: 1 + c.rng.IntN(cfg.MaxBatch),
			Wait: true, Timeout: cfg.PopWait}
		switch x := c.rng.Float64(); {
		case x < 0.1:
			o.Partition = PartitionName(c.rng.IntN(cfg.Partitions))
		case x < 0.4 && cfg.MaxPartitions > 1:
			o.Partitions = 2 + c.rng.IntN(cfg.MaxPartitions-1)
		}
		b := c.broker()
		sent := r.since()
		resp, err := r.clients[b].Pop(ctx, o)
		received := r.since()
		if err != nil && ctx.Err() != nil {
			return
		}
		q := newRequest(RoutePop, b, sent, received, err)
		if err == nil && resp.Error != "" {
			err = fmt.Errorf("pop answered error %q", resp.Error)
			q.Message = resp.Error
		}
		r.request(q)
		if err != nil {
			if !retryable(err) {
				r.violation("pop", "group %s: pop %+v refused: %v", r.groups[c.group], o, err)
			}
			r.popErrors.Add(1)
			r.lastPopError.Store(int64(received))
			c.failed(b)
			r.pause(ctx, 20*time.Millisecond)
			continue
		}
		if len(resp.Messages) > 0 {
			c.handle(ctx, b, resp, sent, received)
		}
	}
}

// handle records a pop answer and acts on it: abandon the lease, or ack the
// messages (completed, failed), in one batch call or one by one.
func (c *consumer) handle(ctx context.Context, b int, resp *api.PopResponse, sent, received time.Duration) {
	r, cfg := c.r, c.r.cfg
	r.lastDelivery.Store(int64(received))
	for last := &r.popSent[b]; ; {
		if old := last.Load(); int64(sent) <= old || last.CompareAndSwap(old, int64(sent)) {
			break
		}
	}
	group := r.groups[c.group]
	if resp.LeaseID == "" {
		r.violation("pop", "group %s: a pop without autoAck answered messages without a leaseId", group)
	}
	// One episode per partition, in claim order; a partition's messages must be adjacent.
	var runs [][]int
	runOf := map[string]int{}
	for i, m := range resp.Messages {
		msg, ok := c.learn(m)
		if !ok {
			continue
		}
		k, seen := runOf[m.PartitionID]
		if seen && k != len(runs)-1 {
			r.violation("data", "group %s, lease %s: messages of partition %s are not adjacent in the pop answer", group, resp.LeaseID, m.Partition)
		}
		if !seen {
			k = len(runs)
			runOf[m.PartitionID] = k
			runs = append(runs, nil)
			c.episodes = append(c.episodes, Episode{Group: c.group, Partition: r.msgs[msg].Partition, LeaseID: resp.LeaseID,
				Consumer: c.id, Broker: b, Sent: sent, Received: received})
		}
		if m.LeaseID != resp.LeaseID || m.ConsumerGroup != group {
			r.violation("data", "group %s: message %d of a pop carries leaseId %q, consumerGroup %q (answer: %q)", group, i, m.LeaseID, m.ConsumerGroup, resp.LeaseID)
		}
		c.deliveries = append(c.deliveries, Delivery{Group: c.group, Msg: msg, Episode: len(c.episodes) - len(runs) + k,
			Pos: len(runs[k]), RetryCount: m.RetryCount})
		runs[k] = append(runs[k], len(c.deliveries)-1)
	}

	if c.rng.Float64() < cfg.AbandonProbability {
		for _, run := range runs {
			c.settle(run, Abandoned)
		}
		return
	}
	if c.rng.IntN(2) == 0 {
		c.ackBatch(ctx, resp.LeaseID, c.plan(runs))
	} else {
		for _, run := range runs {
			c.ackOneByOne(ctx, resp.LeaseID, run)
		}
	}
	for _, run := range runs {
		rest := Abandoned
		for _, di := range run {
			if c.deliveries[di].Outcome == Retried {
				rest = Released
			}
		}
		c.settle(run, rest)
	}
}

// fail decides whether the consumer fails delivery di.
func (c *consumer) fail(di int) bool {
	m := &c.r.msgs[c.deliveries[di].Msg]
	return c.r.cfg.poison(m.Producer, m.Seq, c.group) || c.rng.Float64() < c.r.cfg.FailProbability
}

// stopEarly decides whether the consumer stops acking a partition before its j-th
// message (the rest comes back when the lease expires).
func (c *consumer) stopEarly(j int) bool {
	return j > 0 && c.rng.Float64() < c.r.cfg.AbandonProbability/2
}

// plan decides the acks of a batch call, per partition: completed or failed, usually
// up to the first failure; sometimes the items after a failure are sent too (after
// a retry they must be refused).
func (c *consumer) plan(runs [][]int) [][]planned {
	var plans [][]planned
	for _, run := range runs {
		var p []planned
		for j, di := range run {
			if c.stopEarly(j) {
				break
			}
			fail := c.fail(di)
			p = append(p, planned{d: di, failed: fail})
			if fail && c.rng.Float64() < 0.7 {
				break
			}
		}
		plans = append(plans, p)
	}
	return plans
}

// settle gives every delivery of run that has no outcome yet the outcome o.
func (c *consumer) settle(run []int, o Outcome) {
	for _, di := range run {
		if c.deliveries[di].Outcome == Pending {
			c.deliveries[di].Outcome = o
		}
	}
}

// learn checks a delivered message against what is known of it and returns its index.
func (c *consumer) learn(m api.Message) (int, bool) {
	r := c.r
	i, ok := r.msgIndex(m.TransactionID)
	if !ok {
		r.violation("phantom", "delivered message %s (transactionId %q) was never pushed by the checker", m.ID, m.TransactionID)
		return 0, false
	}
	var body struct{ P, S int }
	r.mu.Lock()
	defer r.mu.Unlock()
	mm := &r.msgs[i]
	bad := func(format string, args ...any) {
		r.violations = append(r.violations, Violation{"data", mm.TxID + ": " + fmt.Sprintf(format, args...)})
	}
	if err := json.Unmarshal(m.Data, &body); err != nil || body.P != mm.Producer || body.S != mm.Seq {
		bad("delivered payload %s", m.Data)
	}
	if m.Partition != PartitionName(mm.Partition) {
		bad("pushed to %s, delivered from partition %s", PartitionName(mm.Partition), m.Partition)
	}
	set := func(field *string, v, name string) {
		if *field == "" {
			*field = v
		} else if *field != v {
			bad("%s %s, earlier %s", name, v, *field)
		}
	}
	set(&mm.ID, m.ID, "delivered as id")
	set(&mm.PartitionID, m.PartitionID, "delivered from partition id")
	set(&mm.CreatedAt, m.CreatedAt, "delivered with createdAt")
	return i, true
}

func (c *consumer) ackItem(leaseID string, p planned) api.AckItem {
	m := &c.r.msgs[c.deliveries[p.d].Msg]
	it := api.AckItem{TransactionID: m.TxID, PartitionID: c.partitionID(p.d), LeaseID: leaseID, Status: api.AckStatusCompleted}
	if p.failed {
		it.Status, it.Error = api.AckStatusFailed, "checker: failed on purpose"
	}
	return it
}

func (c *consumer) partitionID(d int) string {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	return c.r.msgs[c.deliveries[d].Msg].PartitionID
}

// ackBatch acks every planned item in one /ack/batch call.
func (c *consumer) ackBatch(ctx context.Context, leaseID string, plans [][]planned) {
	var items []api.AckItem
	for _, p := range plans {
		for _, x := range p {
			items = append(items, c.ackItem(leaseID, x))
		}
	}
	if len(items) == 0 {
		return
	}
	b := c.broker()
	sent := c.r.since()
	res, err := c.r.clients[b].AckBatch(ctx, api.AckBatchRequest{ConsumerGroup: c.groupParam(), Acknowledgments: items})
	received := c.r.since()
	c.r.request(newRequest(RouteAckBatch, b, sent, received, err))
	if err == nil && len(res) != len(items) {
		c.r.violation("ack", "ack batch of %d items answered %d results", len(items), len(res))
		err = errBadAnswer
	}
	j := 0
	for _, p := range plans {
		retried := false
		for _, x := range p {
			d := &c.deliveries[x.d]
			d.Failed, d.AckSent, d.AckReceived = x.failed, sent, received
			if err != nil {
				d.Outcome = Unknown
				continue
			}
			if retried && x.failed && res[j].Success && !res[j].DLQ {
				// After a retry in the same call the broker only confirms that the
				// lease is gone: no second retry is counted.
				d.Outcome = Released
			} else {
				c.record(d, res[j])
			}
			retried = retried || d.Outcome == Retried
			j++
		}
	}
	if err != nil {
		c.noteAckError(b, err)
	}
}

// ackOneByOne acks the messages of one partition in order, one request each,
// deciding as it goes: it stops at a refusal or a lost answer, goes on after a
// dead-letter, and after a retry sometimes goes on (those acks must be refused).
// Some completed messages are completed with a transaction instead (transact).
func (c *consumer) ackOneByOne(ctx context.Context, leaseID string, run []int) {
	goOn := c.rng.IntN(2) == 0
	for j, di := range run {
		if c.stopEarly(j) {
			return
		}
		x := planned{d: di, failed: c.fail(di)}
		if !x.failed && c.transacts() {
			if !c.transact(ctx, leaseID, run, j) {
				return
			}
			continue
		}
		d := &c.deliveries[di]
		it := c.ackItem(leaseID, x)
		b := c.broker()
		d.Failed, d.AckSent = x.failed, c.r.since()
		res, err := c.r.clients[b].Ack(ctx, api.AckRequest{TransactionID: it.TransactionID, PartitionID: it.PartitionID,
			LeaseID: it.LeaseID, Status: it.Status, ConsumerGroup: c.groupParam(), Error: it.Error})
		d.AckReceived = c.r.since()
		c.r.request(newRequest(RouteAck, b, d.AckSent, d.AckReceived, err))
		if err != nil {
			d.Outcome = Unknown
			c.noteAckError(b, err)
			return
		}
		c.record(d, res)
		if o := d.Outcome; o == Rejected || o == Errored || o == Released || o == Superseded || (o == Retried && !goOn) {
			return
		}
	}
}

func (c *consumer) noteAckError(b int, err error) {
	if !retryable(err) {
		c.r.violation("ack", "group %s: ack refused: %v", c.r.groups[c.group], err)
		return
	}
	c.failed(b)
}

// record classifies an ack answer into d's outcome.
func (c *consumer) record(d *Delivery, res api.AckResult) {
	r := c.r
	tx := r.msgs[d.Msg].TxID
	d.LeaseReleased = res.LeaseReleased != nil && *res.LeaseReleased
	errText := ""
	if res.Error != nil {
		errText = *res.Error
	}
	switch {
	case !res.Success && strings.Contains(errText, "earlier failure"):
		d.Outcome = Released
	case !res.Success && strings.Contains(errText, "Invalid or expired lease"):
		d.Outcome = Rejected
	case !res.Success && d.Failed && strings.HasPrefix(errText, "already committed"):
		d.Outcome = Superseded // another delivery resolved it
	case !res.Success:
		d.Outcome = Errored
		r.violation("ack", "group %s: ack of %s answered error %q", r.groups[c.group], tx, errText)
	case res.Noop && (d.Failed || res.DLQ):
		d.Outcome = Errored
		r.violation("ack", "group %s: failed ack of %s answered noop (dlq %v)", r.groups[c.group], tx, res.DLQ)
	case res.Noop:
		d.Outcome = Superseded // another delivery completed it
	case res.DLQ && !d.Failed:
		d.Outcome = Errored
		r.violation("ack", "group %s: completed ack of %s answered dlq", r.groups[c.group], tx)
	case res.DLQ:
		d.Outcome = DeadLettered
	case d.Failed:
		d.Outcome = Retried
		if !d.LeaseReleased {
			r.violation("ack", "group %s: failed ack of %s retried without releasing the lease", r.groups[c.group], tx)
		}
	default:
		d.Outcome = Acked
	}
	c.resolve(d)
}

// resolve counts d's message as done for the group when d's outcome resolved it.
func (c *consumer) resolve(d *Delivery) {
	if !d.Outcome.resolving() {
		return
	}
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.resolved[c.group][d.Msg] {
		r.resolved[c.group][d.Msg] = true
		r.nResolved[c.group]++
	}
}
