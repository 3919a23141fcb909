package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// mixedBatch is the push and pop batch of the mixed cases.
const mixedBatch = 10

// minPacedRate is the least rate a paced window offers (msg/s), should the flat-out
// window have delivered next to nothing.
const minPacedRate = 100

// mixedCase is a sustained case: producers and consumers run together on one queue
// whose partitions exist, empty, before the window.
type mixedCase struct {
	name       string
	partitions int
	consumers  int
	groups     []string // nil: queue mode; else one consumer per group
}

// fanout is the number of deliveries per message.
func (c mixedCase) fanout() int { return max(len(c.groups), 1) }

// mixedResult is what one mixed window measured.
type mixedResult struct {
	m         measurement     // m.msgs: deliveries inside the window
	pushed    float64         // messages stored per second
	latencies []time.Duration // push→delivery, deliveries inside the window
}

// sustained is the rate the window kept up end to end: what was pushed, or what
// each group got if that was less.
func (mr mixedResult) sustained(fanout int) float64 {
	return min(mr.pushed, mr.m.rate()/float64(fanout))
}

func (o *Options) mixedCaseList() []mixedCase {
	var cases []mixedCase
	for _, n := range axisPartitions() {
		cases = append(cases, mixedCase{name: fmt.Sprintf("mixed_b10_p%d", n), partitions: o.scaled(n), consumers: o.Consumers})
	}
	groups := make([]string, 10)
	for i := range groups {
		groups[i] = "cg" + strconv.Itoa(i)
	}
	return append(cases, mixedCase{name: "mixed_fanout_cg10", partitions: 10, consumers: len(groups), groups: groups})
}

// mixedCases runs every mixed case twice on the same queue: flat out, then paced at
// Options.PacedFraction of the rate the flat-out window sustained.
func (r *runner) mixedCases(ctx context.Context) error {
	for _, c := range r.opts.mixedCaseList() {
		if !r.opts.wants(c.name) {
			continue
		}
		if err := r.mixed(ctx, c); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return nil
}

func (r *runner) mixed(ctx context.Context, c mixedCase) error {
	began := time.Now()
	if err := r.reset(ctx); err != nil {
		return err
	}
	q := r.queueName(c.name)
	r.logf("broker %s: creating %d partitions (one message each, through push), then draining them", c.name, c.partitions)
	if err := r.load.fill(ctx, q, c.partitions, c.partitions, 1, r.payload); err != nil {
		return err
	}
	if err := r.drain(ctx, q, c); err != nil {
		return err
	}
	if err := r.analyze(ctx); err != nil {
		return err
	}
	r.logf("  set up in %s", since(began))
	flat, err := r.mixedWindow(ctx, c, q, 0)
	if err != nil {
		return err
	}
	// What flat out left behind would be the paced window's backlog.
	if err := r.drain(ctx, q, c); err != nil {
		return err
	}
	rate := max(r.opts.PacedFraction*flat.sustained(c.fanout()), minPacedRate)
	paced, err := r.mixedWindow(ctx, c, q, rate)
	if err != nil {
		return err
	}

	r.add(r.mixedRows(c, rate, flat, paced)...)
	return nil
}

// mixedRows renders the six results of a mixed case.
func (r *runner) mixedRows(c mixedCase, rate float64, flat, paced mixedResult) []Result {
	unit := "delivered"
	if c.groups != nil {
		unit = fmt.Sprintf("deliveries/s (%d groups)", len(c.groups))
	}
	how := fmt.Sprintf("%d producers b%d round robin over %d partitions, %d consumers pop b%d wait=true + ack",
		r.opts.Producers, mixedBatch, c.partitions, c.consumers, mixedBatch)
	flatNote := fmt.Sprintf("flat out, %s; pushed %.0f msg/s", how, flat.pushed)
	pacedNote := fmt.Sprintf("paced: offered %.0f msg/s (%.0f%% of the %.0f sustained flat out), pushed %.0f",
		rate, r.opts.PacedFraction*100, flat.sustained(c.fanout()), paced.pushed)
	latNote := func(what string, mr mixedResult) string {
		return fmt.Sprintf("%s: push request built -> pop answer read, %d deliveries", what, len(mr.latencies))
	}
	return []Result{
		withCPU(throughput(c.name, flat.m.rate(), 0, unit+", "+flatNote), flat.m, measurement{}),
		plain(c.name+"_e2e_p50_ms", ms(percentile(flat.latencies, 0.50)), "ms", latNote("flat out", flat)),
		plain(c.name+"_e2e_p99_ms", ms(percentile(flat.latencies, 0.99)), "ms", latNote("flat out", flat)),
		withCPU(throughput(c.name+"_paced", paced.m.rate(), 0, unit+", "+pacedNote), paced.m, measurement{}),
		plain(c.name+"_paced_e2e_p50_ms", ms(percentile(paced.latencies, 0.50)), "ms", latNote("paced", paced)),
		plain(c.name+"_paced_e2e_p99_ms", ms(percentile(paced.latencies, 0.99)), "ms", latNote("paced", paced)),
	}
}

// drain leaves nothing pending in queue q for any group of c (unmeasured): it moves
// each group's cursors to the end (one set-based seek, where pops take about a
// millisecond per partition), then pops, auto-acknowledged, whatever is left: all of
// it when the broker refuses or fails the seek (a broker that has no such route, or
// whose seek cannot lock that many partitions in one transaction). One consumer
// drains: first pops of partitions create their cursor rows, and concurrent ones
// wait on each other.
func (r *runner) drain(ctx context.Context, q string, c mixedCase) error {
	groups := c.groups
	if groups == nil {
		groups = []string{queue.QueueModeGroup}
	}
	moved := 0
	for _, g := range groups {
		n, supported, err := r.load.seekToEnd(ctx, q, g)
		if err != nil || !supported {
			why := "the broker refused it"
			if err != nil {
				why = err.Error()
			}
			r.logf("  note: no seek (%s); draining by pops, about a millisecond per pending partition", why)
			break
		}
		moved += n
	}
	began := time.Now()
	n, err := r.load.drain(ctx, q, c.groups, 1)
	if err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	r.logf("  drained: %d cursors moved to the end, %d deliveries popped in %s", moved, n, since(began))
	return nil
}

// mixedWindow runs the producers and consumers of c together on queue q for one
// window: flat out when rate is 0, else the producers together offer rate msg/s.
// Workers 0…Producers-1 push, the others pop and ack; both finish the request in
// flight when the window ends, so the queue is left without leases.
func (r *runner) mixedWindow(ctx context.Context, c mixedCase, q string, rate float64) (mixedResult, error) {
	p := r.opts.Producers
	name := c.name
	var pace *pacer
	if rate > 0 {
		name += "_paced"
		pace = newPacer(rate/mixedBatch, p)
	}
	var pushed atomic.Int64
	lat := newLatencyLog(r.clock, c.consumers)
	push := r.load.pushOp(pushSpec{queue: q, batch: mixedBatch, rr: newRoundRobin(c.partitions),
		payload: r.clock.timedPayload(r.opts.PayloadBytes), pace: pace, graceful: true, pushed: &pushed}, p)
	pop := r.load.popAckOp(popSpec{queue: q, groups: c.groups, batch: mixedBatch, wait: true, graceful: true, lat: lat},
		c.consumers)
	fn := func(ctx context.Context, w int) (int, error) {
		if w < p {
			_, err := push(ctx, w)
			return 0, err // deliveries are what the window counts
		}
		return pop(ctx, w-p)
	}

	win := r.brokerWindow(ctx, name)
	var pushedAtStart int64
	profile := win.atStart
	win.atStart = func() func() {
		pushedAtStart = pushed.Load()
		if profile != nil {
			return profile()
		}
		return func() {}
	}
	if rate > 0 {
		r.logf("broker %s: %d producers offering %.0f msg/s, %d consumers", name, p, rate, c.consumers)
	} else {
		r.logf("broker %s: %d producers and %d consumers flat out", name, p, c.consumers)
	}
	m, err := win.run(ctx, p+c.consumers, 0, r.cpu(), fn)
	if err != nil {
		return mixedResult{}, err
	}
	r.brokerCPU += m.cpu.broker
	r.brokerMsgs += m.msgs
	res := mixedResult{m: m, latencies: lat.within(m.start, m.elapsed)}
	if m.elapsed > 0 {
		res.pushed = float64(pushed.Load()-pushedAtStart) / m.elapsed.Seconds()
	}
	r.logf("  delivered %.0f msg/s, pushed %.0f msg/s, e2e p50 %.1f ms, p99 %.1f ms", m.rate(), res.pushed,
		ms(percentile(res.latencies, 0.5)), ms(percentile(res.latencies, 0.99)))
	return res, nil
}
