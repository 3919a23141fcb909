package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// Push batching: its fixed limits (its settings are QUEEN_PUSH_*).
const (
	// maxCombinedItems and maxCombinedBytes bound one combined statement; a push that
	// large runs alone, at once.
	maxCombinedItems = 1000
	maxCombinedBytes = 4 << 20
	// pushEscape is how much longer than the hold a push waits for a busy statement
	// before it runs alone.
	pushEscape = 20 * time.Millisecond
)

// PushBatching configures how pushes share insert statements (upstream's batching
// engine names). MaxConcurrent and MaxBatch must be positive (New checks); a zero
// Preferred or ParallelMin is 1.
type PushBatching struct {
	MaxConcurrent int           // statements at once (QUEEN_PUSH_MAX_CONCURRENT)
	MaxBatch      int           // pushes per statement (QUEEN_PUSH_MAX_BATCH_SIZE)
	Preferred     int           // start a statement once this many wait (QUEEN_PUSH_PREFERRED_BATCH_SIZE)
	Hold          time.Duration // ... or once the oldest waited this long (QUEEN_PUSH_MAX_HOLD_MS)
	// ParallelMin is how many messages the pushes in line must carry for a statement
	// to start beside one that runs, when pushes can be combined
	// (QUEEN_PUSH_PARALLEL_MIN_MESSAGES). A statement costs PostgreSQL about as much
	// to start and commit as 10–15 of its rows, and a backend works on one core:
	// smaller pushes wait for the running statement and share the next one, larger
	// ones get a backend of their own.
	ParallelMin int
}

// pushCombiner runs the inserts of pushes through at most MaxConcurrent statements at
// a time. A push waits in line; whenever a statement is free and the line holds
// Preferred pushes (or its oldest waited Hold), the pushes at its head go into one
// statement together (up to MaxBatch pushes, maxCombinedItems items and
// maxCombinedBytes of payload). With the default Preferred of 1 a push waits while no
// statement runs only for the producers a lone statement has just answered
// (echoHold); while one runs, another starts only for a line of
// ParallelMin messages or more, or once the line's oldest push has waited Hold (at
// once when MaxBatch is 1, as pushes cannot be combined then), so that under load
// many small pushes become one statement and one commit, the way PostgreSQL groups
// commits. Each push keeps its items together and in order, so a combined statement
// stores what the pushes would have stored one after the other. A push of
// maxCombinedItems items or more always runs alone at once, and so does a push that
// waited Hold + pushEscape: slow statements (waiting for a lock) never hold up the
// others for longer.
type pushCombiner struct {
	insert func(ctx context.Context, items []queue.PushItem) ([]queue.PushResult, error)
	cfg    PushBatching

	mu      sync.Mutex
	running int
	waiting []*pushCall
	queued  int         // the messages of the pushes in waiting
	holdFor *time.Timer // armed while the line is shorter than Preferred
	echo    echoHold    // what the line waits for after a lone statement's answers
	parked  bool        // a finished statement's goroutine waits for the echo
	wake    chan struct{}

	statements atomic.Uint64 // insert statements run
	pushes     atomic.Uint64 // pushes they carried
	escaped    atomic.Uint64 // pushes that ran alone after waiting Hold + pushEscape
	echoed     atomic.Uint64 // echoes waited for and come back whole
}

// pushCall is one push waiting for, or carried by, a statement.
type pushCall struct {
	ctx   context.Context
	items []queue.PushItem
	bytes int
	at    time.Time
	taken bool // guarded by pushCombiner.mu: in a statement, no longer withdrawn
	done  chan struct{}
	res   []queue.PushResult
	err   error
}

// PushCombining counts the insert statements the broker ran for pushes and the
// pushes they carried (pushes/statements above 1 means pushes were combined), the
// pushes that gave up waiting and ran alone, the echoes waited for that came back
// whole (echoHold), and the pushes waiting now.
type PushCombining struct {
	Statements, Pushes, Escaped, Echoed uint64
	Waiting                             int
}

func newPushCombiner(cfg PushBatching, insert func(context.Context, []queue.PushItem) ([]queue.PushResult, error)) *pushCombiner {
	cfg.Preferred = max(cfg.Preferred, 1)
	cfg.ParallelMin = max(cfg.ParallelMin, 1)
	cfg.Hold = max(cfg.Hold, 0)
	return &pushCombiner{insert: insert, cfg: cfg, wake: make(chan struct{}, 1),
		echo: echoHold{on: cfg.Preferred == 1 && cfg.MaxBatch > 1 && cfg.Hold > 0, score: 1, done: true}}
}

func (c *pushCombiner) stats() PushCombining {
	c.mu.Lock()
	waiting := len(c.waiting)
	c.mu.Unlock()
	return PushCombining{Statements: c.statements.Load(), Pushes: c.pushes.Load(),
		Escaped: c.escaped.Load(), Echoed: c.echoed.Load(), Waiting: waiting}
}

// push inserts items, alone or combined with other pushes, and returns their results
// in order. A push whose ctx ends while it waits is withdrawn (nothing of it is
// stored); one whose ctx ends while its statement runs is answered at once with the
// context's error, and the statement, which may still commit, is canceled once no
// push it carries is waiting for it.
func (c *pushCombiner) push(ctx context.Context, items []queue.PushItem) ([]queue.PushResult, error) {
	bytes := payloadBytes(items)
	if len(items) >= maxCombinedItems || bytes >= maxCombinedBytes {
		return c.alone(ctx, items)
	}
	c.mu.Lock()
	now := time.Now()
	if c.echo.arrive(now) {
		c.echoed.Add(1)
	}
	if len(c.waiting) == 0 && c.running < c.cfg.MaxConcurrent && c.cfg.Preferred <= 1 && c.mayStartLocked(len(items)) &&
		c.echo.wait(now, c.running, 1, len(items) >= c.cfg.ParallelMin) == 0 {
		// A statement is free and nobody waits: run here, without a hand-over.
		c.running++
		c.mu.Unlock()
		defer c.release(now)
		return c.alone(ctx, items)
	}
	call := &pushCall{ctx: ctx, items: items, bytes: bytes, at: now, done: make(chan struct{})}
	c.waiting = append(c.waiting, call)
	c.queued += len(items)
	if c.parked && c.echo.wait(now, 0, len(c.waiting), c.queued >= c.cfg.ParallelMin) == 0 {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	c.dispatchLocked()
	c.mu.Unlock()

	escape := time.NewTimer(c.cfg.Hold + pushEscape)
	defer escape.Stop()
	select {
	case <-call.done:
		return call.res, call.err
	case <-ctx.Done():
	case <-escape.C:
	}
	if c.withdraw(call) {
		if err := ctx.Err(); err != nil {
			return nil, contextError(err)
		}
		c.escaped.Add(1)
		return c.alone(ctx, items)
	}
	if ctx.Err() == nil { // the escape fired as a statement took it: wait for that one
		select {
		case <-call.done:
			return call.res, call.err
		case <-ctx.Done():
		}
	}
	select {
	case <-call.done:
		if call.err == nil { // finished meanwhile: its answer is the true one
			return call.res, nil
		}
	default:
	}
	return nil, contextError(ctx.Err())
}

// alone runs one push in a statement of its own, outside the limit.
func (c *pushCombiner) alone(ctx context.Context, items []queue.PushItem) ([]queue.PushResult, error) {
	c.statements.Add(1)
	c.pushes.Add(1)
	return c.insert(ctx, items)
}

// withdraw takes call out of the line; false when a statement took it first.
func (c *pushCombiner) withdraw(call *pushCall) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if call.taken {
		return false
	}
	for i, w := range c.waiting {
		if w == call {
			c.waiting = append(c.waiting[:i], c.waiting[i+1:]...)
			c.queued -= len(call.items)
			break
		}
	}
	return true
}

// dispatchLocked starts statements for the head of the line while one is free and a
// batch is ready; a line shorter than Preferred is held until its oldest push has
// waited Hold, and one too small to start beside a running statement waits for it, at
// most until its oldest push has waited Hold.
func (c *pushCombiner) dispatchLocked() {
	for c.running < c.cfg.MaxConcurrent && len(c.waiting) > 0 {
		if wait := c.echo.wait(time.Now(), c.running, len(c.waiting), c.queued >= c.cfg.ParallelMin); wait > 0 {
			c.armLocked(wait)
			return
		}
		if len(c.waiting) < c.cfg.Preferred {
			if wait := c.cfg.Hold - time.Since(c.waiting[0].at); wait > 0 {
				c.armLocked(wait)
				return
			}
		}
		if !c.mayStartLocked(c.queued) {
			// The running statement takes the line when it ends, or, if it is slow, a
			// statement beside it once the oldest push has waited Hold.
			if wait := c.cfg.Hold - time.Since(c.waiting[0].at); wait > 0 {
				c.armLocked(wait)
				return
			}
		}
		batch := c.takeLocked()
		c.running++
		go c.drain(batch)
	}
}

// drain runs batch, then the next ready batch of the line in the same goroutine, until
// none is ready: a goroutine per statement would grow its stack through pgx each time
// (7 % of the broker's CPU with four producers pushing one message at a time).
func (c *pushCombiner) drain(batch []*pushCall) {
	var t *time.Timer
	for batch != nil {
		start := time.Now()
		c.run(batch)
		batch = c.next(start, len(batch), &t)
	}
}

// next takes the next batch for a finished statement's slot when one is ready; else
// it frees the slot (starting what the line allows) and returns nil. done is how many
// pushes the finished statement answered; when it ran alone, the slot waits for the
// echo (echoHold) before it takes a line that is shorter, parked on a timer of the
// caller's (*t, made on first use).
func (c *pushCombiner) next(start time.Time, done int, t **time.Timer) []*pushCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.running == 1 {
		c.echo.answered(now, now.Sub(start), done, len(c.waiting), c.cfg.MaxBatch, c.cfg.Hold)
	}
	for {
		ready := len(c.waiting) > 0 && (len(c.waiting) >= c.cfg.Preferred || now.Sub(c.waiting[0].at) >= c.cfg.Hold)
		wait := c.echo.wait(now, c.running-1, len(c.waiting), c.queued >= c.cfg.ParallelMin)
		if wait <= 0 && ready {
			batch := c.takeLocked()
			c.dispatchLocked() // what this batch left may be enough for a statement beside it
			return batch
		}
		if wait <= 0 {
			c.running--
			c.dispatchLocked()
			return nil
		}
		c.parked = true
		c.mu.Unlock()
		if *t == nil {
			*t = time.NewTimer(wait)
		} else {
			(*t).Reset(wait)
		}
		select {
		case <-c.wake:
		case <-(*t).C:
		}
		c.mu.Lock()
		c.parked = false
		now = time.Now()
	}
}

// release frees the statement slot of a finished statement and starts the next.
func (c *pushCombiner) release(start time.Time) {
	c.mu.Lock()
	if c.running == 1 {
		now := time.Now()
		c.echo.answered(now, now.Sub(start), 1, len(c.waiting), c.cfg.MaxBatch, c.cfg.Hold)
	}
	c.running--
	c.dispatchLocked()
	c.mu.Unlock()
}

// mayStartLocked reports whether a statement carrying items messages may start now,
// as far as the statements already running are concerned (the caller checks
// MaxConcurrent).
func (c *pushCombiner) mayStartLocked(items int) bool {
	return c.running == 0 || c.cfg.MaxBatch == 1 || items >= c.cfg.ParallelMin
}

func (c *pushCombiner) armLocked(wait time.Duration) {
	if c.holdFor == nil {
		c.holdFor = time.AfterFunc(wait, func() {
			c.mu.Lock()
			c.dispatchLocked()
			c.mu.Unlock()
		})
		return
	}
	c.holdFor.Reset(wait)
}

// takeLocked removes the next batch from the head of the line: at least one push, at
// most MaxBatch, within the item and byte bounds.
func (c *pushCombiner) takeLocked() []*pushCall {
	n, items, bytes := 0, 0, 0
	for n < len(c.waiting) && n < c.cfg.MaxBatch {
		w := c.waiting[n]
		if n > 0 && (items+len(w.items) > maxCombinedItems || bytes+w.bytes > maxCombinedBytes) {
			break
		}
		w.taken = true
		items += len(w.items)
		bytes += w.bytes
		n++
	}
	batch := make([]*pushCall, n)
	copy(batch, c.waiting)
	c.waiting = append(c.waiting[:0], c.waiting[n:]...)
	c.queued -= items
	return batch
}

// run inserts the items of batch in one statement. A single push runs with its own
// context; a combined statement's context ends when every push of batch has stopped
// waiting. An error that may belong to one push's items (not the database being
// unreachable or slow) makes each push run again alone, so that it is answered with
// its own outcome.
func (c *pushCombiner) run(batch []*pushCall) {
	if len(batch) == 1 {
		call := batch[0]
		call.res, call.err = c.alone(call.ctx, call.items)
		close(call.done)
		return
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
	defer cancel()
	var left atomic.Int64
	left.Store(int64(len(batch)))
	n := 0
	for _, call := range batch {
		n += len(call.items)
	}
	items := make([]queue.PushItem, 0, n)
	for _, call := range batch {
		stop := context.AfterFunc(call.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
		items = append(items, call.items...)
	}
	c.statements.Add(1)
	c.pushes.Add(uint64(len(batch)))
	res, err := c.insert(ctx, items)
	if err != nil && !errors.Is(err, queue.ErrUnavailable) && !errors.Is(err, queue.ErrTimeout) && ctx.Err() == nil {
		for _, call := range batch {
			call.res, call.err = c.alone(call.ctx, call.items)
			close(call.done)
		}
		return
	}
	if err == nil && len(res) != len(items) {
		err = fmt.Errorf("broker: a combined push returned %d results for %d items", len(res), len(items))
	}
	at := 0
	for _, call := range batch {
		if err != nil {
			call.err = err
		} else {
			call.res = res[at : at+len(call.items) : at+len(call.items)]
			for i := range call.res {
				call.res[i].Index = i
			}
		}
		at += len(call.items)
		close(call.done)
	}
}

func payloadBytes(items []queue.PushItem) int {
	n := 0
	for i := range items {
		n += len(items[i].Payload)
	}
	return n
}

// contextError classifies the end of a push's context the way the store classifies
// a statement cut off by it: a deadline is a timeout, never a reason to spool.
func contextError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", queue.ErrTimeout, err)
	}
	return fmt.Errorf("push canceled: %w", err)
}
