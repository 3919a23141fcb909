package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// popCase is one pop+ack (or fan-out) configuration, run once raw and once through
// the broker.
type popCase struct {
	name       string
	batch      int
	partitions int
	consumers  int
	groups     []string // nil: queue mode
	messages   int      // pre-filled messages (each read once per group)
}

func (c popCase) deliveries() int64 { return int64(c.messages) * int64(max(len(c.groups), 1)) }

func (c popCase) note(vs string) string {
	kind, mode := "pop+ack", "queue mode"
	if c.groups != nil {
		kind, mode = "deliveries/s, pop+ack", fmt.Sprintf("%d groups", len(c.groups))
	}
	return fmt.Sprintf("%s b%d, %d partitions, %d msgs, %d consumers, %s%s",
		kind, c.batch, c.partitions, c.messages, c.consumers, mode, vs)
}

// popCaseList lists the pop+ack and fan-out configurations with their data sizes, in
// report order. Every partition of an axis case holds a full batch (a pop of a
// partition with fewer messages returns fewer, and the rate per message would measure
// the data's shape, not the partition count), and the case enough to outlast a window.
func (o *Options) popCaseList() []popCase {
	c := o.Consumers
	groups := make([]string, 10)
	for i := range groups {
		groups[i] = "cg" + strconv.Itoa(i)
	}
	shrink := func(m int) int {
		if o.Quick {
			return m / 50
		}
		return m
	}
	cases := []popCase{
		{name: "popack_b1", batch: 1, partitions: 100, consumers: c, messages: shrink(20_000)},
		{name: "popack_b10", batch: 10, partitions: 100, consumers: c, messages: shrink(60_000)},
		{name: "popack_b100", batch: 100, partitions: 100, consumers: c, messages: shrink(200_000)},
		{name: "popack_b100_p1", batch: 100, partitions: 1, consumers: 1, messages: shrink(60_000)},
	}
	for _, n := range axisPartitions() {
		p := o.scaled(n)
		cases = append(cases, popCase{name: fmt.Sprintf("popack_b10_p%d", n), batch: 10, partitions: p, consumers: c,
			messages: max(10*p, shrink(60_000))})
	}
	return append(cases,
		popCase{name: "fanout_cg10", batch: 100, partitions: 10, consumers: len(groups), groups: groups, messages: shrink(20_000)})
}

// popCases runs the pop+ack and fan-out cases, raw_claim1_b100 beside popack_b100,
// and the scale rows of the partition axis (push and pop).
func (r *runner) popCases(ctx context.Context) error {
	o := &r.opts
	for _, c := range o.popCaseList() {
		claim1 := c.name == "popack_b100" && (o.wants(c.name) || o.wants("raw_claim1_b100")) && r.db != nil
		if !o.wants(c.name) && !claim1 {
			continue
		}
		var one measurement
		if claim1 {
			var err error
			if one, err = r.rawPop(ctx, c, true); err != nil {
				return fmt.Errorf("raw one-statement cycle %s: %w", c.name, err)
			}
		}
		if o.wants(c.name) {
			raw, err := r.rawPop(ctx, c, false)
			if err != nil {
				return fmt.Errorf("raw two-commit cycle %s: %w", c.name, err)
			}
			m, err := r.brokerPopAck(ctx, c)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			if c.name == "popack_b100" {
				r.popB100 = m
			}
			r.add(withCPU(throughput(c.name, m.rate(), raw.rate(), c.note(r.vs("raw two-commit cycle"))), m, raw))
		}
		if claim1 {
			r.add(plain("raw_claim1_b100", one.rate(), "msg/s", fmt.Sprintf(
				"reference: the one-statement cycle (claim, read, advance; no lease, one commit), b100, %d partitions, %d connections",
				c.partitions, c.consumers)))
		}
	}
	r.add(scaleRows(r.rep)...)
	return nil
}

// scaleRows returns scale_<kind>_b10_pN = <kind>_b10_pN / <kind>_b10_p100 for the
// larger counts of the axis, for the kinds push and popack, where both were measured.
func scaleRows(rep *Report) []Result {
	var out []Result
	for _, kind := range []string{"push", "popack"} {
		base, ok := rep.Get(kind + "_b10_p100")
		if !ok || base.Value <= 0 {
			continue
		}
		for _, n := range axisPartitions()[1:] {
			name := fmt.Sprintf("%s_b10_p%d", kind, n)
			res, ok := rep.Get(name)
			if !ok {
				continue
			}
			out = append(out, Result{Name: "scale_" + name, Value: round(res.Value/base.Value, 3), Unit: "x",
				Note: fmt.Sprintf("%s / %s_b10_p100, same run", name, kind)})
		}
	}
	return out
}

// rawPop measures a raw cycle of c over the same layout and data: the two-commit
// cycle (the ceiling), or with oneStatement the one-statement cycle. No ceiling (a
// zero measurement) without a database.
func (r *runner) rawPop(ctx context.Context, c popCase, oneStatement bool) (measurement, error) {
	if r.db == nil {
		return measurement{}, nil
	}
	began := time.Now()
	pids, err := r.rawSetup(ctx, c.partitions)
	if err != nil {
		return measurement{}, err
	}
	groups := c.groups
	if groups == nil {
		groups = []string{queue.QueueModeGroup}
	}
	kind, fn := "two-commit cycle", r.db.rawTwoCommitOp("bench-raw", groups, c.batch)
	if oneStatement {
		kind, fn = "one-statement cycle", r.db.rawClaim1Op("bench-raw", groups, c.batch)
	}
	r.logf("raw %s %s: filling %d messages", kind, c.name, c.messages)
	if err := r.db.rawFill(ctx, "bench-raw", pids, c.messages, r.payload, groups); err != nil {
		return measurement{}, err
	}
	r.logf("raw %s %s: batch %d, %d partitions, %d connections (set up in %s)", kind, c.name, c.batch, c.partitions,
		c.consumers, since(began))
	m, err := r.win.run(ctx, c.consumers, c.deliveries(), r.rawCPU(), fn)
	r.logResult(m)
	return m, err
}

func (r *runner) brokerPopAck(ctx context.Context, c popCase) (measurement, error) {
	began := time.Now()
	if err := r.reset(ctx); err != nil {
		return measurement{}, err
	}
	q := r.queueName(c.name)
	r.logf("broker %s: filling %d messages through push", c.name, c.messages)
	// Fill requests span many partitions, each taking its ordering lock: concurrent
	// fillers would only queue on those locks (and, over 10 000 partitions, on a busy
	// machine, run into DB_LOCK_TIMEOUT). One producer fills without contention.
	if err := r.load.fill(ctx, q, c.partitions, c.messages, 1, r.payload); err != nil {
		return measurement{}, err
	}
	if err := r.analyze(ctx); err != nil {
		return measurement{}, err
	}
	r.logf("broker %s: batch %d, %d partitions, %d consumers (set up in %s)", c.name, c.batch, c.partitions, c.consumers,
		since(began))
	spec := popSpec{queue: q, groups: c.groups, batch: c.batch}
	m, err := r.brokerWindow(ctx, c.name).run(ctx, c.consumers, c.deliveries(), r.cpu(), r.load.popAckOp(spec, c.consumers))
	r.account(c.name, m)
	return m, err
}
