package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

const queueModeGroup = api.QueueModeGroup

// run is the state of one checker run.
type run struct {
	cfg     Config
	cl      Cluster
	clients []*client.Client
	hcs     []*http.Client
	groups  []string
	start   time.Time

	// offsets[p] is the index in msgs of producer p's first message.
	offsets []int

	mu         sync.Mutex // guards msgs' learned fields, violations, resolved, pushSpans
	msgs       []Message
	violations []Violation
	resolved   [][]bool // [group][msg]: completed or dead-lettered (known)
	nResolved  []int
	nPushed    int
	pushSpans  [][]span // [broker]: the pushes it answered 2xx

	// popSent[broker] is when the latest pop it answered with messages was sent
	// (time offset, nanoseconds; -1: none yet).
	popSent []atomic.Int64

	// restartLog is written by the restarter only, and read once it is done.
	restartLog []Restart
	// restartsDone is closed when the restarter returns.
	restartsDone chan struct{}
	// faultLog is written by the faulter only, and read once it is done; faultsDone
	// is closed when it returns, faultsEnd is then the time offset (nanoseconds).
	faultLog   []FaultEvent
	faultsDone chan struct{}
	faultsEnd  atomic.Int64

	reqMu    sync.Mutex // guards requests
	requests []Request

	producersDone atomic.Bool
	stop          atomic.Bool
	lastDelivery  atomic.Int64 // time offset, nanoseconds
	lastPopError  atomic.Int64 // time offset, nanoseconds
	restarts      atomic.Int64
	pushRetries   atomic.Int64
	popErrors     atomic.Int64

	errOnce sync.Once
	err     error
	cancel  context.CancelFunc
}

// span times one request: sent, and its answer received.
type span struct{ sent, received time.Duration }

// Run drives cl's brokers with cfg's traffic, drains the queue, reads the dead-letter
// entries (GET /api/v1/dlq) and verifies the history. The error is for a run that could not be
// carried out (a broker that cannot restart, a push rejected with 4xx...); broken
// guarantees are in the report.
func Run(ctx context.Context, cfg Config, cl Cluster) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &run{cfg: cfg, cl: cl, groups: cfg.groupNames(), start: time.Now(), cancel: cancel,
		restartsDone: make(chan struct{}), faultsDone: make(chan struct{})}
	for _, u := range cl.URLs() {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 128
		hc := &http.Client{Transport: tr}
		r.hcs = append(r.hcs, hc)
		r.clients = append(r.clients, client.New(u, client.WithHTTPClient(hc)))
	}
	defer func() {
		for _, hc := range r.hcs {
			hc.CloseIdleConnections()
		}
	}()
	r.pushSpans = make([][]span, len(r.clients))
	r.popSent = make([]atomic.Int64, len(r.clients))
	for b := range r.popSent {
		r.popSent[b].Store(-1)
	}
	r.plan()

	if _, err := r.clients[0].Configure(ctx, api.ConfigureRequest{Queue: cfg.Queue, Options: &api.QueueOptions{
		LeaseTime: api.Int(int(cfg.LeaseTime / time.Second)), RetryLimit: api.Int(cfg.RetryLimit),
		RetryDelay: api.Int(int(cfg.RetryDelay / time.Millisecond)),
	}}); err != nil {
		return nil, fmt.Errorf("checker: configure %s: %w", cfg.Queue, err)
	}
	if cfg.TransactionProbability > 0 {
		if _, err := r.clients[0].Configure(ctx, api.ConfigureRequest{Queue: cfg.followUpQueue()}); err != nil {
			return nil, fmt.Errorf("checker: configure %s: %w", cfg.followUpQueue(), err)
		}
	}

	var consumers sync.WaitGroup
	var all []*consumer
	for g := range r.groups {
		for i := range cfg.ConsumersPerGroup {
			c := &consumer{r: r, id: len(all), group: g, home: (g + i) % len(r.clients),
				rng: rand.New(rand.NewPCG(cfg.Seed, uint64(1000+len(all))))}
			all = append(all, c)
			consumers.Go(func() { c.loop(ctx) })
		}
	}
	var background sync.WaitGroup
	background.Go(func() { r.restarter(ctx) })
	background.Go(func() { r.faulter(ctx) })
	var producers sync.WaitGroup
	for p := range cfg.Producers {
		producers.Go(func() { r.produce(ctx, p) })
	}
	producers.Wait()
	r.producersDone.Store(true)
	cfg.Logf("checker: producers done after %s (%d pushed)", r.since().Round(time.Millisecond), r.pushed())
	reason := r.drain(ctx)
	cfg.Logf("checker: drain ended (%s) after %s", reason, r.since().Round(time.Millisecond))
	consumers.Wait()
	background.Wait()
	if r.err != nil {
		return nil, r.err
	}

	rows, err := deadLetters(ctx, r.clients[0], cfg.Queue)
	if err != nil {
		return nil, fmt.Errorf("checker: read the dead-letter queue: %w", err)
	}
	h := r.history(all, rows)
	if cfg.TransactionProbability > 0 {
		if h.FollowUps, err = r.readFollowUps(ctx); err != nil {
			return nil, fmt.Errorf("checker: read the follow-up queue %s: %w", cfg.followUpQueue(), err)
		}
	}
	rep := Verify(h)
	rep.Brokers = len(r.clients)
	rep.Restarts = int(r.restarts.Load())
	rep.PushRetries = int(r.pushRetries.Load())
	rep.PopErrors = int(r.popErrors.Load())
	rep.RestartLog = r.restartTraffic(all)
	rep.Elapsed = r.since()
	return rep, nil
}

// fail records the first error that makes the run impossible and stops it.
func (r *run) fail(err error) {
	r.errOnce.Do(func() {
		r.err = err
		r.cancel()
	})
}

func (r *run) since() time.Duration { return time.Since(r.start) }

func (r *run) violation(kind, format string, args ...any) {
	r.mu.Lock()
	r.violations = append(r.violations, Violation{Kind: kind, Detail: fmt.Sprintf(format, args...)})
	r.mu.Unlock()
}

func (r *run) pushed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nPushed
}

// plan lays out every message: producer p's seq-th message (from 1) is msgs[offsets[p]+seq-1].
func (r *run) plan() {
	cfg := r.cfg
	rng := rand.New(rand.NewPCG(cfg.Seed, 7))
	r.offsets = make([]int, cfg.Producers)
	for p := range cfg.Producers {
		r.offsets[p] = len(r.msgs)
		n := cfg.Messages / cfg.Producers
		if p < cfg.Messages%cfg.Producers {
			n++
		}
		part := 0
		for seq := 1; seq <= n; seq++ {
			// Runs of a few messages share a partition (so poison pairs often meet), and
			// partitions 0 and 1 are a little hotter, so producers often meet there.
			if seq == 1 || rng.IntN(3) == 0 {
				part = rng.IntN(cfg.Partitions)
				if rng.IntN(8) == 0 {
					part = rng.IntN(min(2, cfg.Partitions))
				}
			}
			r.msgs = append(r.msgs, Message{Producer: p, Seq: seq, TxID: TxID(p, seq), Partition: part})
		}
	}
	r.resolved = make([][]bool, len(r.groups))
	for g := range r.resolved {
		r.resolved[g] = make([]bool, len(r.msgs))
	}
	r.nResolved = make([]int, len(r.groups))
}

// msgIndex maps a transaction id back to its message.
func (r *run) msgIndex(txid string) (int, bool) {
	var p, seq int
	if n, err := fmt.Sscanf(txid, "p%d-s%d", &p, &seq); n != 2 || err != nil || p < 0 || p >= len(r.offsets) || seq < 1 {
		return 0, false
	}
	i := r.offsets[p] + seq - 1
	if i >= len(r.msgs) || r.msgs[i].Producer != p {
		return 0, false
	}
	return i, true
}

// produce pushes producer p's messages, paced over cfg.Duration, one request at a
// time: a push starts only after the previous one was answered. In a rolling
// restart the messages of the last slot wait for the restarts to end, however long
// they take, so that the broker restarted last serves pushes again. With faults the
// last share (one in len(Faults)+1) goes one message per push at a quarter of the
// pace while a fault is still running, so that pushes go on measuring recovery from
// faults that outlast Duration; what is left of it goes once they are over. So does
// every push a producer behind its pace makes past Duration.
func (r *run) produce(ctx context.Context, p int) {
	cfg := r.cfg
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(100+p)))
	first := r.offsets[p]
	n := cfg.Messages / cfg.Producers
	if p < cfg.Messages%cfg.Producers {
		n++
	}
	tail := n
	rolling := cfg.Rolling && cfg.Restarts > 0
	switch {
	case rolling:
		slots := cfg.Restarts + 2 // as the restarter's
		tail = n - n/slots
	case len(cfg.Faults) > 0:
		tail = n - n/(len(cfg.Faults)+1)
	}
	trickle := 4 * cfg.Duration / time.Duration(n) // a quarter of the pace
	var next time.Duration                         // the earliest start of the next trickled push
	for k := 0; k < n; {
		if !r.waitUntil(ctx, max(next, time.Duration(int64(cfg.Duration)*int64(k)/int64(n)))) {
			return
		}
		size := min(1+rng.IntN(cfg.PushBatch), n-k)
		// A producer behind its pace past Duration with faults planned pushes as the
		// last share does, whatever the message: a fault running then is measured by
		// pushes of one message.
		late := len(cfg.Faults) > 0 && !rolling && r.since() >= cfg.Duration
		switch {
		case k < tail && !late:
		case rolling:
			select {
			case <-r.restartsDone:
			case <-ctx.Done():
				return
			}
		case next >= 0:
			select {
			case <-r.faultsDone:
				next = -1 // never trickle again
			default:
				size, next = 1, r.since()+trickle
			}
		}
		idx := make([]int, size)
		items := make([]api.PushItem, size)
		for j := range size {
			m := &r.msgs[first+k+j] // plan fields only: never written after plan
			idx[j] = first + k + j
			items[j] = api.PushItem{Queue: cfg.Queue, Partition: PartitionName(m.Partition), TransactionID: m.TxID,
				Payload: json.RawMessage(fmt.Sprintf(`{"p":%d,"s":%d}`, m.Producer, m.Seq))}
		}
		if err := r.push(ctx, p%len(r.clients), items, idx); err != nil {
			if ctx.Err() == nil {
				r.fail(err)
			}
			return
		}
		k += size
	}
}

// push sends items until a broker answers, moving to the next broker after a
// transport error or a 5xx; the transaction ids make a retried push idempotent. A
// 5xx other than 503 is retried too, and judged by [Verify] from the recorded
// request.
func (r *run) push(ctx context.Context, b int, items []api.PushItem, idx []int) error {
	for attempt := 0; ; attempt++ {
		r.mu.Lock()
		for _, i := range idx {
			if m := &r.msgs[i]; !slices.Contains(m.Via, b) {
				m.Via = append(m.Via, b)
			}
		}
		r.mu.Unlock()
		sent := r.since()
		res, err := r.clients[b].Push(ctx, items...)
		received := r.since()
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		r.request(pushRequest(b, sent, received, len(items), res, err))
		if err == nil {
			r.recordPush(b, span{sent, received}, items, idx, res, attempt)
			return nil
		}
		if !retryable(err) {
			return fmt.Errorf("checker: push %s...: %w", items[0].TransactionID, err)
		}
		r.pushRetries.Add(1)
		b = (b + 1) % len(r.clients)
		if !r.pause(ctx, time.Duration(min(attempt+1, 8))*20*time.Millisecond) {
			return ctx.Err()
		}
	}
}

func (r *run) recordPush(b int, s span, items []api.PushItem, idx []int, res []api.PushResult, attempt int) {
	if len(res) != len(items) {
		r.violation("push", "push of %d items answered %d results", len(items), len(res))
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pushSpans[b] = append(r.pushSpans[b], s)
	for j, pr := range res {
		m := &r.msgs[idx[j]]
		switch {
		case pr.Status == api.PushStatusBuffered && r.cfg.AllowBuffered:
			// Spooled: no message id nor partition id yet; the delivery tells them.
			if id := pr.ID(); id != "" && id != m.TxID {
				r.violations = append(r.violations, Violation{"push", fmt.Sprintf("%s: buffered push result %d names %s", m.TxID, j, id)})
			}
			m.Buffered = true
			r.markPushed(m)
			continue
		case pr.Status == api.PushStatusDuplicate && attempt == 0:
			r.violations = append(r.violations, Violation{"push", fmt.Sprintf("%s: first push answered duplicate", m.TxID)})
		case pr.Status != api.PushStatusQueued && pr.Status != api.PushStatusDuplicate:
			r.violations = append(r.violations, Violation{"push", fmt.Sprintf("%s: push answered %q", m.TxID, pr.Status)})
			continue
		}
		if pr.ID() != m.TxID {
			r.violations = append(r.violations, Violation{"push", fmt.Sprintf("%s: push result %d names %s", m.TxID, j, pr.ID())})
		}
		if m.ID != "" && m.ID != pr.MessageID {
			r.violations = append(r.violations, Violation{"data", fmt.Sprintf("%s: push answered id %s, delivered as %s", m.TxID, pr.MessageID, m.ID)})
		}
		if m.ID == "" {
			m.ID = pr.MessageID
		}
		if pr.PartitionID != "" {
			if m.PartitionID != "" && m.PartitionID != pr.PartitionID {
				r.violations = append(r.violations, Violation{"data", fmt.Sprintf("%s: push answered partition %s, delivered from %s", m.TxID, pr.PartitionID, m.PartitionID)})
			}
			m.PartitionID = pr.PartitionID
		}
		r.markPushed(m)
	}
}

// markPushed counts m as pushed; r.mu is held.
func (r *run) markPushed(m *Message) {
	if !m.Pushed {
		m.Pushed = true
		r.nPushed++
	}
}

// drain waits, once the producers are done and the faults injected, until every
// group has completed every pushed message, or nothing was delivered for cfg.Quiet
// while pops were answered (counted from the end of the faults at the earliest: a
// database still away is not quiet), or cfg.DrainTimeout; then it stops the
// consumers.
func (r *run) drain(ctx context.Context) string {
	defer r.stop.Store(true)
	deadline := r.since() + r.cfg.DrainTimeout
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return "cancelled"
		case <-tick.C:
		}
		now := r.since()
		select {
		case <-r.faultsDone:
		default:
			if now > deadline {
				return "drain timeout (faults still running)"
			}
			continue
		}
		quietSince := max(time.Duration(r.lastDelivery.Load()), time.Duration(r.faultsEnd.Load()),
			time.Duration(r.lastPopError.Load()))
		switch {
		case r.allResolved():
			return "every group completed every message"
		case now-quietSince > r.cfg.Quiet:
			return fmt.Sprintf("nothing delivered for %s", r.cfg.Quiet)
		case now > deadline:
			return "drain timeout"
		}
	}
}

func (r *run) allResolved() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.nResolved {
		if n < r.nPushed {
			return false
		}
	}
	return true
}

// waitUntil waits until offset at of the run; false when ctx ended first.
func (r *run) waitUntil(ctx context.Context, at time.Duration) bool {
	return r.pause(ctx, at-r.since())
}

// pause waits d (pacing, back-off); false when ctx ended first.
func (r *run) pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// retryable reports whether err may go away on another broker: no answer at all
// (transport error) or a 5xx.
func retryable(err error) bool {
	s := client.StatusCode(err)
	return s == 0 || s >= 500
}

// history assembles what the run recorded.
func (r *run) history(all []*consumer, rows []DeadLetter) *History {
	h := &History{Groups: r.groups, Partitions: r.cfg.Partitions, LeaseTime: r.cfg.LeaseTime,
		RetryLimit: r.cfg.RetryLimit, RetryDelay: r.cfg.RetryDelay, Messages: r.msgs, DeadLetters: rows,
		Faults: r.faultLog, Only503: r.cfg.Only503}
	r.reqMu.Lock()
	h.Requests = slices.Clone(r.requests)
	r.reqMu.Unlock()
	h.Violations = append(h.Violations, r.violations...)
	for _, c := range all {
		base := len(h.Episodes)
		h.Episodes = append(h.Episodes, c.episodes...)
		for _, d := range c.deliveries {
			d.Episode += base
			h.Deliveries = append(h.Deliveries, d)
		}
	}
	return h
}
