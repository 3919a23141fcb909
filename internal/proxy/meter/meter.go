package meter

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// keep is how long an unflushed minute waits before it is dropped.
const keep = 60 * time.Minute

type minuteKey struct {
	tenant string
	minute time.Time
}

// Meter holds the counts not yet flushed. It is safe for concurrent use.
type Meter struct {
	now     func() time.Time
	flushes *prometheus.CounterVec

	mu      sync.Mutex
	minutes map[minuteKey]*tenant.Usage
	gauges  map[string]tenant.Usage
}

// New returns an empty meter; flush results are counted in reg as
// queen_proxy_usage_flushes_total{result}.
func New(now func() time.Time, reg prometheus.Registerer) *Meter {
	m := &Meter{now: now, minutes: map[minuteKey]*tenant.Usage{}, gauges: map[string]tenant.Usage{},
		flushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_proxy_usage_flushes_total", Help: "Metering flushes to the proxy database, by result.",
		}, []string{"result"})}
	reg.MustRegister(m.flushes)
	return m
}

// Add applies f to the tenant's counts of the current minute.
func (m *Meter) Add(tenantID string, f func(u *tenant.Usage)) {
	k := minuteKey{tenant: tenantID, minute: m.now().UTC().Truncate(time.Minute)}
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.minutes[k]
	if u == nil {
		u = &tenant.Usage{}
		m.minutes[k] = u
	}
	f(u)
}

// SetStored records the tenant's stored messages, bytes and queues (the usage
// snapshot): the gauges of every minute flushed from now on.
func (m *Meter) SetStored(tenantID string, messages, bytes, queues int64) {
	m.mu.Lock()
	m.gauges[tenantID] = tenant.Usage{StoredMessages: messages, StoredBytes: bytes, Queues: queues}
	m.mu.Unlock()
}

// Pending returns the counts not yet flushed, for the admin API and tests.
func (m *Meter) Pending() []tenant.UsagePoint {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]tenant.UsagePoint, 0, len(m.minutes))
	for k, u := range m.minutes {
		p := tenant.UsagePoint{Tenant: k.tenant, Start: k.minute, Usage: *u}
		g := m.gauges[k.tenant]
		p.StoredMessages, p.StoredBytes, p.Queues = g.StoredMessages, g.StoredBytes, g.Queues
		out = append(out, p)
	}
	return out
}

// Flush writes every minute held to st. Minutes before the current one are
// forgotten once written; on failure they are kept for a later flush, and those
// older than 60 minutes are dropped.
func (m *Meter) Flush(ctx context.Context, st *store.Store, replicaID string, logger *slog.Logger) error {
	points := m.Pending()
	if len(points) == 0 {
		return nil
	}
	err := st.UsageUpsert(ctx, replicaID, points)
	current := m.now().UTC().Truncate(time.Minute)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil {
		m.flushes.WithLabelValues("ok").Inc()
		for _, p := range points {
			k := minuteKey{tenant: p.Tenant, minute: p.Start}
			if u := m.minutes[k]; u != nil && p.Start.Before(current) && *u == p.Usage.Counters() {
				delete(m.minutes, k)
			}
		}
		return nil
	}
	m.flushes.WithLabelValues("error").Inc()
	dropped := 0
	for k := range m.minutes {
		if current.Sub(k.minute) > keep {
			delete(m.minutes, k)
			dropped++
		}
	}
	if dropped > 0 {
		logger.Error("metering minutes dropped: the proxy database has been unreachable for an hour", "minutes", dropped, "err", err)
	}
	return err
}

// Runner flushes a meter periodically and at the stop, and runs the rollup.
type Runner struct {
	Meter     *Meter
	Store     *store.Store
	ReplicaID string
	Interval  time.Duration
	Logger    *slog.Logger
}

// Run flushes every Interval (and runs the hourly rollup once a minute) until ctx is
// done, then flushes a last time.
func (r *Runner) Run(ctx context.Context) {
	tick := time.NewTicker(r.Interval)
	defer tick.Stop()
	lastRollup := time.Time{}
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := r.Meter.Flush(fctx, r.Store, r.ReplicaID, r.Logger); err != nil {
				r.Logger.Warn("last metering flush failed", "err", err)
			}
			cancel()
			return
		case now := <-tick.C:
			fctx, cancel := context.WithTimeout(ctx, r.Interval+5*time.Second)
			if err := r.Meter.Flush(fctx, r.Store, r.ReplicaID, r.Logger); err != nil {
				r.Logger.Debug("metering flush failed; kept for the next one", "err", err)
			}
			if now.Sub(lastRollup) >= time.Minute {
				if _, err := r.Store.UsageRollup(fctx, now); err == nil {
					lastRollup = now
				}
			}
			cancel()
		}
	}
}
