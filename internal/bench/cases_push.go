package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// pushCase is one push configuration, run once raw and once through the broker.
type pushCase struct {
	name  string
	batch int
	// partitions: request k of the case (whichever producer sends it) goes to
	// partition k mod partitions, all its items into that one partition.
	partitions int
	// precreate: the partitions exist before the window (an unmeasured fill of one
	// message per partition); otherwise the first requests create them.
	precreate bool
	// producers overrides Options.Producers (the many-producer cases).
	producers int
}

// manyProducers is the producer count of push_b1_c32 and push_b10_c32: a fleet of
// small producers, where the broker combines pushes (QUEEN_PUSH_MAX_CONCURRENT).
const manyProducers = 32

// manyProducerBatches lists the batch sizes of the many-producer cases.
func manyProducerBatches() []int { return []int{1, 10} }

func (c pushCase) workers(o *Options) int { return cmp.Or(c.producers, o.Producers) }

func (c pushCase) note(producers int, vs string) string {
	layout := fmt.Sprintf("round robin over %d partitions", c.partitions)
	if c.partitions == 1 {
		layout = "all into ONE partition (ordering lock)"
	}
	if c.precreate {
		layout += " (created before the window)"
	}
	return fmt.Sprintf("%d producers, %d msgs per request to one partition, %s%s", producers, c.batch, layout, vs)
}

// pushCases runs push_bN (100 partitions), push_b100_p1 and the partition axis
// push_b10_pN.
func (r *runner) pushCases(ctx context.Context) error {
	o := &r.opts
	for _, b := range pushBatches() {
		c := pushCase{name: fmt.Sprintf("push_b%d", b), batch: b, partitions: 100}
		withOne := b == 100 && o.wants("push_b100_p1")
		withHTTP := slices.Contains(httpRawBatches(), b) && r.db != nil && o.wants(httpRawName(b))
		if !o.wants(c.name) && !withOne && !withHTTP {
			continue
		}
		raw, err := r.rawPush(ctx, c)
		if err != nil {
			return fmt.Errorf("raw insert %s: %w", c.name, err)
		}
		if o.wants(c.name) {
			m, err := r.brokerPush(ctx, c)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			if b == 100 {
				r.pushB100 = m
			}
			r.add(withCPU(throughput(c.name, m.rate(), raw.rate(), c.note(o.Producers, r.vs("raw insert"))), m, raw))
		}
		if withOne {
			// Raw inserts take no ordering lock: one partition or 100 costs them the same.
			one := pushCase{name: "push_b100_p1", batch: 100, partitions: 1}
			m, err := r.brokerPush(ctx, one)
			if err != nil {
				return fmt.Errorf("%s: %w", one.name, err)
			}
			r.add(withCPU(throughput(one.name, m.rate(), raw.rate(), one.note(o.Producers, r.vs("push_b100's raw insert"))), m, raw))
		}
		if withHTTP {
			m, err := r.httpRawPush(ctx, c)
			if err != nil {
				return fmt.Errorf("%s: %w", httpRawName(b), err)
			}
			r.add(withCPU(throughput(httpRawName(b), m.rate(), raw.rate(), fmt.Sprintf(
				"%d producers, %d msgs per request: the raw insert behind a bare net/http handler (in queen-bench), vs raw insert",
				o.Producers, b)), m, raw))
		}
	}
	var more []pushCase
	for _, b := range manyProducerBatches() {
		more = append(more, pushCase{name: fmt.Sprintf("push_b%d_c%d", b, manyProducers), batch: b, partitions: 100,
			producers: manyProducers})
	}
	for _, n := range axisPartitions() {
		more = append(more, pushCase{name: fmt.Sprintf("push_b10_p%d", n), batch: 10, partitions: o.scaled(n), precreate: true})
	}
	for _, c := range more {
		if !o.wants(c.name) {
			continue
		}
		raw, err := r.rawPush(ctx, c)
		if err != nil {
			return fmt.Errorf("raw insert %s: %w", c.name, err)
		}
		m, err := r.brokerPush(ctx, c)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		r.add(withCPU(throughput(c.name, m.rate(), raw.rate(), c.note(c.workers(o), r.vs("raw insert"))), m, raw))
	}
	return nil
}

// httpRawBatches lists the batch sizes of http_raw_bN, the raw insert behind HTTP
// (httpraw.go), measured after push_bN against the same raw ceiling.
func httpRawBatches() []int { return []int{1, 10} }

func httpRawName(batch int) string { return fmt.Sprintf("http_raw_b%d", batch) }

// httpRawPush measures the raw insert of c behind HTTP: the broker's load generator
// against httpRaw, on the raw ceiling's partitions (emptied first).
func (r *runner) httpRawPush(ctx context.Context, c pushCase) (measurement, error) {
	began := time.Now()
	pids, err := r.rawSetup(ctx, c.partitions)
	if err != nil {
		return measurement{}, err
	}
	srv, err := r.db.startHTTPRaw(pids, r.payload, c.batch)
	if err != nil {
		return measurement{}, err
	}
	p := c.workers(&r.opts)
	load, err := newHTTPLoad(srv.url, "")
	if err != nil {
		return measurement{}, errors.Join(err, srv.close(ctx))
	}
	defer load.close()
	r.logf("raw insert behind HTTP %s: batch %d, %d partitions, %d producers (set up in %s)", httpRawName(c.batch), c.batch,
		c.partitions, p, since(began))
	spec := pushSpec{queue: "bench-raw", batch: c.batch, rr: newRoundRobin(c.partitions), payload: constPayload(r.payload)}
	m, err := r.win.run(ctx, p, 0, r.rawCPU(), load.pushOp(spec, p))
	r.logResult(m)
	return m, errors.Join(err, srv.close(ctx))
}

// pushBatches lists the batch sizes of push_bN.
func pushBatches() []int { return []int{1, 10, 100, 1000} }

// axisPartitions lists the partition counts of the partition-scale axis (named by
// these numbers; -quick shrinks the counts, see Options.scaled).
func axisPartitions() []int { return []int{100, 10_000, 100_000} }

// rawPush measures the insert ceiling of c: one multi-row insert of c.batch rows into
// one partition per statement, statements cycling over c.partitions. No ceiling
// (a zero measurement) without a database.
func (r *runner) rawPush(ctx context.Context, c pushCase) (measurement, error) {
	if r.db == nil {
		return measurement{}, nil
	}
	began := time.Now()
	pids, err := r.rawSetup(ctx, c.partitions)
	if err != nil {
		return measurement{}, err
	}
	if c.precreate {
		if err := r.db.rawFill(ctx, "bench-raw", pids, c.partitions, r.payload, nil); err != nil {
			return measurement{}, err
		}
	}
	p := c.workers(&r.opts)
	r.logf("raw insert ceiling %s: batch %d, %d partitions, %d connections (set up in %s)", c.name, c.batch, c.partitions, p,
		since(began))
	m, err := r.win.run(ctx, p, 0, r.rawCPU(), r.db.rawInsertOp(pids, newRoundRobin(c.partitions), r.payload, c.batch, p))
	r.logResult(m)
	return m, err
}

func (r *runner) brokerPush(ctx context.Context, c pushCase) (measurement, error) {
	began := time.Now()
	if err := r.reset(ctx); err != nil {
		return measurement{}, err
	}
	q := r.queueName(c.name)
	if c.precreate {
		r.logf("broker %s: creating %d partitions (one message each, through push)", c.name, c.partitions)
		if err := r.load.fill(ctx, q, c.partitions, c.partitions, 1, r.payload); err != nil {
			return measurement{}, err
		}
		if err := r.analyze(ctx); err != nil {
			return measurement{}, err
		}
	}
	p := c.workers(&r.opts)
	r.logf("broker %s: batch %d, %d partitions, %d producers (set up in %s)", c.name, c.batch, c.partitions, p, since(began))
	spec := pushSpec{queue: q, batch: c.batch, rr: newRoundRobin(c.partitions), payload: constPayload(r.payload)}
	m, err := r.brokerWindow(ctx, c.name).run(ctx, p, 0, r.cpu(), r.load.pushOp(spec, p))
	r.account(c.name, m)
	return m, err
}

// rawSetup empties the tables and creates the raw queue with its partitions, whose
// ids it returns in name order.
func (r *runner) rawSetup(ctx context.Context, partitions int) ([]string, error) {
	if err := r.db.reset(ctx); err != nil {
		return nil, err
	}
	return r.db.rawQueue(ctx, "bench-raw", partitions)
}
