package telemetry

import (
	"cmp"
	"context"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/queenmq/queen/internal/store"
)

// RateLogMessage is the message of the periodic Info line.
const RateLogMessage = "rates and sizes"

// topQueues is how many queues the rate log names, deepest first.
const topQueues = 5

// rateState remembers the counters at the previous rate log line.
type rateState struct {
	mu   sync.Mutex
	last activityTotals // guarded by mu
	at   time.Time      // guarded by mu
}

// RunRateLog writes the "rates and sizes" line every interval until ctx is done.
// interval <= 0 turns it off: RunRateLog returns at once.
func (t *Telemetry) RunRateLog(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			t.logRates(ctx, now)
		}
	}
}

// LogRates writes one "rates and sizes" line at Info: push, pop and ack rates since
// the previous line (or since [New]), parked long-polls, pool use and the deepest
// queues of the cached backlog reading. It runs no SQL.
func (t *Telemetry) LogRates(ctx context.Context) { t.logRates(ctx, time.Now()) }

func (t *Telemetry) logRates(ctx context.Context, now time.Time) {
	cur := t.readActivity()
	t.rates.mu.Lock()
	prev, since := t.rates.last, now.Sub(t.rates.at)
	t.rates.last, t.rates.at = cur, now
	t.rates.mu.Unlock()

	perSec := func(d int64) float64 {
		if since <= 0 {
			return 0
		}
		return math.Round(float64(d)/since.Seconds()*100) / 100
	}
	pool := t.store.Stats()
	attrs := []slog.Attr{
		slog.Duration("window", since.Round(time.Millisecond)),
		slog.Float64("push_per_sec", perSec(cur.pushed-prev.pushed)),
		slog.Float64("pop_per_sec", perSec(cur.popped-prev.popped)),
		slog.Float64("ack_per_sec", perSec(cur.acked-prev.acked)),
		slog.Int("parked_longpolls", t.broker.ParkedPolls()),
		slog.Int("db_pool_in_use", pool.AcquiredConns),
		slog.Int("db_pool_max", pool.MaxConns),
	}
	if push, pop := t.broker.Paused(); push || pop {
		attrs = append(attrs, slog.Bool("maintenance_push", push), slog.Bool("maintenance_pop", pop))
	}
	if st, ok := t.broker.SpoolStats(); ok && (st.PendingRecords > 0 || !st.Healthy) {
		attrs = append(attrs, slog.Int64("spool_pending", st.PendingRecords), slog.Int64("spool_bytes", st.PendingBytes),
			slog.Bool("spool_healthy", st.Healthy))
	}
	if r := t.cachedBacklog(); r != nil {
		var pending int64
		for _, q := range r.Queues {
			pending += q.Pending
		}
		attrs = append(attrs, slog.Int64("pending_messages", pending),
			slog.Int64("dlq_messages", r.DeadLetterTotal),
			slog.Attr{Key: "top_queues", Value: deepest(r.Queues, topQueues)})
	} else {
		attrs = append(attrs, slog.String("backlog", "unavailable"))
	}
	t.logger.LogAttrs(ctx, slog.LevelInfo, RateLogMessage, attrs...)
}

// deepest renders the n queues with the most pending messages (ties by name) as a
// group queue name → pending; queues with nothing pending are left out.
func deepest(queues []store.QueueBacklog, n int) slog.Value {
	qs := slices.DeleteFunc(slices.Clone(queues), func(q store.QueueBacklog) bool { return q.Pending <= 0 })
	slices.SortFunc(qs, func(a, b store.QueueBacklog) int {
		return cmp.Or(cmp.Compare(b.Pending, a.Pending), cmp.Compare(a.Name, b.Name))
	})
	attrs := make([]slog.Attr, 0, min(n, len(qs)))
	for _, q := range qs[:min(n, len(qs))] {
		attrs = append(attrs, slog.Int64(q.Name, q.Pending))
	}
	return slog.GroupValue(attrs...)
}
