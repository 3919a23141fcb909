package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// segFillSegment is the segment size of the pop+ack fills: a pop of 10 takes a tenth
// of a segment, a pop of 100 one segment (or parts of two).
const segFillSegment = 100

// segIdle is how long a mixed consumer that found nothing waits before it looks again
// (both layouts alike).
const segIdle = 2 * time.Millisecond

// segCase is one configuration of the segment prototype, measured on today's layout
// (the raw ceiling), then on the prototype with each packing.
type segCase struct {
	name       string
	kind       string // "push", "popack" or "mixed"
	batch      int
	partitions int
	messages   int // pre-filled (popack)
}

// segmentCaseList lists the prototype's cases: push b1, b10, b100, pop+ack b10 and
// b100 and mixed b10, at 100 and 10 000 partitions (-quick: 1 000, see scaled).
func (o *Options) segmentCaseList() []segCase {
	var cases []segCase
	for _, n := range []int{100, 10_000} {
		p := o.scaled(n)
		for _, b := range []int{1, 10, 100} {
			cases = append(cases, segCase{name: fmt.Sprintf("seg_push_b%d_p%d", b, n), kind: "push", batch: b, partitions: p})
		}
		for _, b := range []int{10, 100} {
			// Every partition holds a full batch, and the case enough to outlast a window
			// (as popack_b10 and popack_b100).
			base := map[int]int{10: 60_000, 100: 200_000}[b]
			m := max(b*p, base)
			if o.Quick {
				m = max(p, m/50)
			}
			cases = append(cases, segCase{name: fmt.Sprintf("seg_popack_b%d_p%d", b, n), kind: "popack", batch: b,
				partitions: p, messages: m})
		}
		cases = append(cases, segCase{name: fmt.Sprintf("seg_mixed_b10_p%d", n), kind: "mixed", batch: 10, partitions: p})
	}
	return cases
}

// segmentCaseNames lists the names Only accepts with Options.Segments.
func (o *Options) segmentCaseNames() []string {
	var names []string
	for _, c := range o.segmentCaseList() {
		names = append(names, c.name)
	}
	return names
}

// segmentCases runs the prototype's cases: for each, today's raw ceiling first, then
// the prototype with each packing, reported as seg_<packing>_<case> with today's
// ceiling beside it.
func (r *runner) segmentCases(ctx context.Context) error {
	defer func() {
		if err := r.db.dropSegments(context.WithoutCancel(ctx)); err != nil {
			r.logf("warning: %v", err)
		}
	}()
	groups := []string{queue.QueueModeGroup}
	for _, c := range r.opts.segmentCaseList() {
		if !r.opts.wants(c.name) {
			continue
		}
		today, err := r.segToday(ctx, c, groups)
		if err != nil {
			return fmt.Errorf("%s, today's layout: %w", c.name, err)
		}
		for _, p := range segPackings() {
			m, pushed, err := r.segPrototype(ctx, c, newSegStore(r.db, p), groups)
			if err != nil {
				return fmt.Errorf("%s, %s packing: %w", c.name, p, err)
			}
			name := "seg_" + string(p) + c.name[len("seg"):]
			r.add(throughput(name, m.rate(), today.rate(), c.note(r.opts, p, pushed)))
		}
	}
	return nil
}

func (c segCase) workers(o Options) int {
	switch c.kind {
	case "push":
		return o.Producers
	case "popack":
		return o.Consumers
	}
	return o.Producers + o.Consumers
}

func (c segCase) note(o Options, p segPacking, pushed float64) string {
	switch c.kind {
	case "push":
		return fmt.Sprintf("prototype (%s), %d producers, %d msgs per segment, round robin over %d partitions, vs raw insert",
			p, o.Producers, c.batch, c.partitions)
	case "popack":
		return fmt.Sprintf("prototype (%s), pop+ack b%d, %d partitions, %d msgs in segments of %d, %d consumers, "+
			"vs raw two-commit cycle", p, c.batch, c.partitions, c.messages, segFillSegment, o.Consumers)
	}
	return fmt.Sprintf("prototype (%s), delivered; %d producers b%d (pushed %.0f msg/s) and %d consumers b%d, %d partitions, "+
		"vs raw insert + ready row and two-commit cycle", p, o.Producers, c.batch, pushed, o.Consumers, c.batch, c.partitions)
}

// segToday measures c on today's layout: the raw insert, the raw two-commit cycle,
// or both at once (the insert then also adds the ready row the cycle needs).
func (r *runner) segToday(ctx context.Context, c segCase, groups []string) (measurement, error) {
	began := time.Now()
	pids, err := r.rawSetup(ctx, c.partitions)
	if err != nil {
		return measurement{}, err
	}
	var fn op
	switch c.kind {
	case "push":
		fn = r.db.rawInsertOp(pids, newRoundRobin(c.partitions), r.payload, c.batch, c.workers(r.opts))
	case "popack":
		if err := r.db.rawFill(ctx, "bench-raw", pids, c.messages, r.payload, groups); err != nil {
			return measurement{}, err
		}
		fn = r.db.rawTwoCommitOp("bench-raw", groups, c.batch)
	case "mixed":
		push, err := r.db.todayPushReadyOp(ctx, "bench-raw", pids, groups[0], r.payload, c.batch, r.opts.Producers)
		if err != nil {
			return measurement{}, err
		}
		var pushed atomic.Int64
		fn = mixedOp(r.opts.Producers, push, r.db.rawTwoCommitOp("bench-raw", groups, c.batch), segIdle, &pushed)
	}
	r.logf("%s: today's layout, raw (set up in %s)", c.name, since(began))
	m, err := r.win.run(ctx, c.workers(r.opts), int64(c.messages), nil, fn)
	r.logResult(m)
	return m, err
}

// segPrototype measures c on the prototype; pushed is the push rate of a mixed case
// (over the whole run, warm-up included).
func (r *runner) segPrototype(ctx context.Context, c segCase, s *segStore, groups []string) (measurement, float64, error) {
	began := time.Now()
	if err := r.reset(ctx); err != nil { // today's tables, left full by the ceiling
		return measurement{}, 0, err
	}
	pids, err := s.create(ctx, c.partitions, groups)
	if err != nil {
		return measurement{}, 0, err
	}
	var (
		fn     op
		pushed atomic.Int64
	)
	switch c.kind {
	case "push":
		fn = s.pushOp(pids, newRoundRobin(c.partitions), r.payload, c.batch, c.workers(r.opts))
	case "popack":
		if err := s.fill(ctx, pids, c.messages, segFillSegment, r.payload); err != nil {
			return measurement{}, 0, err
		}
		fn = s.cycleOp(groups[0], c.batch, nil)
	case "mixed":
		push := s.pushOp(pids, newRoundRobin(c.partitions), r.payload, c.batch, r.opts.Producers)
		fn = mixedOp(r.opts.Producers, push, s.cycleOp(groups[0], c.batch, nil), segIdle, &pushed)
	}
	r.logf("%s: prototype, %s packing (set up in %s)", c.name, s.packing, since(began))
	ran := time.Now()
	m, err := r.win.run(ctx, c.workers(r.opts), int64(c.messages), nil, fn)
	r.logResult(m)
	return m, float64(pushed.Load()) / time.Since(ran).Seconds(), err
}

// todayPushReadyOp is the producer of today's layout in a mixed ceiling: the raw
// insert of batch rows into one partition plus its ready row for group
// (sqlTodayPushReady), statement after statement round robin over pids.
func (d *database) todayPushReadyOp(ctx context.Context, queueName string, pids []string, group, payload string,
	batch, workers int) (op, error) {
	var qid string
	if err := d.pool.QueryRow(ctx, `SELECT id::text FROM queen.queues WHERE name = $1`, queueName).Scan(&qid); err != nil {
		return nil, fmt.Errorf("raw queue: %w", err)
	}
	if _, err := d.pool.Exec(ctx, sqlRawFillCursors, queueName, []string{group}); err != nil {
		return nil, fmt.Errorf("raw cursors: %w", err)
	}
	if err := d.analyze(ctx); err != nil {
		return nil, err
	}
	ids := queue.NewIDGenerator()
	ins := make([]*rawInserter, workers)
	for w := range ins {
		ins[w] = newRawInserter(ids, payload, batch)
	}
	rr := newRoundRobin(len(pids))
	return func(ctx context.Context, w int) (int, error) {
		pid := pids[rr.take()]
		args := append(ins[w].args(func(int) string { return pid }), group, qid)
		_, err := d.pool.Exec(ctx, sqlTodayPushReady, args...)
		return batch, err
	}, nil
}
