package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/store"
)

// namespace prefixes every family of this package.
const namespace = "queen"

// DefaultRefreshInterval is how often [Telemetry.Run] recomputes the backlog gauges.
// The query may scan every message of up to [MaxQueues] queues, so it is not run more
// often; a Prometheus scrape interval of 15 s or more sees a fresh value each time.
const DefaultRefreshInterval = 15 * time.Second

// MaxQueues bounds the queues covered by the backlog gauges (the first ones by name),
// which also bounds the cardinality of the queue label.
const MaxQueues = 1000

// MaxGroupSeries bounds the (consumer group, queue) pairs covered by the consumer
// group gauges (the first ones by group, then queue name), which bounds the
// cardinality of their group and queue labels; past it the gauges leave the other
// pairs out and queen_metrics_refresh_groups_truncated is 1.
const MaxGroupSeries = 1000

// refreshTimeout bounds one backlog query.
const refreshTimeout = 10 * time.Second

// Options configures [New].
type Options struct {
	// Broker supplies parked long-polls and, once recorded, activity counters.
	Broker *broker.Broker
	// Store supplies pool statistics and the backlog query.
	Store *store.Store
	// Logger receives refresh failures and the "rates and sizes" line; nil discards.
	Logger *slog.Logger
	// RefreshInterval is the backlog refresh period; 0 means [DefaultRefreshInterval].
	RefreshInterval time.Duration
	// Started is when the process started, for queen_uptime_seconds; zero means now.
	Started time.Time
}

// Telemetry owns the broker's metric families and the backlog cache. Build it with
// [New]; it is safe for concurrent use.
type Telemetry struct {
	broker   *broker.Broker
	store    *store.Store
	logger   *slog.Logger
	interval time.Duration
	started  time.Time

	refreshDuration prometheus.Gauge
	refreshSuccess  prometheus.Gauge
	refreshTime     prometheus.Gauge
	refreshTrunc    prometheus.Gauge
	groupsTrunc     prometheus.Gauge
	syncReplication prometheus.Gauge

	// refreshMu serialises refreshes (the loop and direct calls).
	refreshMu sync.Mutex
	failing   bool // the previous refresh failed; guarded by refreshMu

	mu      sync.RWMutex
	backlog *store.BacklogReading // nil: no successful reading, or the last one failed

	rates rateState
}

// New registers the broker families on reg and returns the telemetry that feeds
// them. It fails only when a family is already registered on reg.
func New(reg prometheus.Registerer, opts Options) (*Telemetry, error) {
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = DefaultRefreshInterval
	}
	if opts.Started.IsZero() {
		opts.Started = time.Now()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	t := &Telemetry{
		broker:   opts.Broker,
		store:    opts.Store,
		logger:   opts.Logger,
		interval: opts.RefreshInterval,
		started:  opts.Started,
		refreshDuration: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "metrics", Name: "refresh_duration_seconds",
			Help: "Duration of the last backlog refresh (the per-queue depth, age and dead-letter query); " +
				"growing towards its 10 s timeout means the backlog is large enough that the query needs attention.",
		}),
		refreshSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "metrics", Name: "refresh_success",
			Help: "1 if the last backlog refresh succeeded; 0 if it failed or none has run yet (until the " +
				"database is reachable at startup).",
		}),
		refreshTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "metrics", Name: "refresh_timestamp_seconds",
			Help: "Unix time of the last successful backlog refresh.",
		}),
		refreshTrunc: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "metrics", Name: "refresh_truncated",
			Help: "1 when more than 1000 queues exist: the per-queue backlog families cover only the first 1000 " +
				"by name (queen_dlq_depth still counts everything).",
		}),
		groupsTrunc: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "metrics", Name: "refresh_groups_truncated",
			Help: "1 when more than 1000 (consumer group, queue) pairs exist: the queen_consumer_group_* gauges " +
				"cover only the first 1000 by group, then queue name (a bound on their label cardinality; the " +
				"API views list up to 10 000 pairs).",
		}),
		syncReplication: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "db", Name: "synchronous_replication",
			Help: "1 when the database's commits wait for a synchronous standby (synchronous_standby_names " +
				"set, synchronous_commit on, remote_write or remote_apply), as the last backlog refresh read " +
				"them: then a failover to that standby keeps every acknowledged push and ack. 0 with no " +
				"standby, with asynchronous replication, or while Patroni's synchronous_mode has no standby " +
				"to name (0 until the first refresh).",
		}),
	}
	t.rates.last = t.readActivity()
	t.rates.at = opts.Started
	cs := []prometheus.Collector{
		t.refreshDuration, t.refreshSuccess, t.refreshTime, t.refreshTrunc, t.groupsTrunc, t.syncReplication,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "uptime_seconds",
			Help: "Seconds since the broker process started (upstream name).",
		}, func() float64 { return time.Since(t.started).Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "pop", Name: "longpolls_parked",
			Help: "Long-poll pops parked on this replica right now, waiting for messages; about the number of " +
				"idle consumers connected to it.",
		}, func() float64 { return float64(t.broker.ParkedPolls()) }),
		newPoolCollector(t.store),
		newBacklogCollector(t),
	}
	cs = append(cs, t.brokerCollectors()...)
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Run refreshes the backlog gauges at once and then every refresh interval until ctx
// is done. Failures are logged and exported, never returned.
func (t *Telemetry) Run(ctx context.Context) {
	tick := time.NewTicker(t.interval)
	defer tick.Stop()
	for {
		_ = t.Refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Refresh runs the backlog query once and replaces the cache with its result; on
// failure it empties the cache (the backlog families disappear from scrapes) and
// returns the error. A first failure is logged at Warn, the recovery at Info.
func (t *Telemetry) Refresh(ctx context.Context) error {
	t.refreshMu.Lock()
	defer t.refreshMu.Unlock()
	qctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	start := time.Now()
	r, err := t.store.QueueBacklogList(qctx, start, MaxQueues, MaxGroupSeries)
	if err != nil && ctx.Err() != nil {
		return err // shutting down: keep the last state, say nothing
	}
	t.refreshDuration.Set(time.Since(start).Seconds())
	if err != nil {
		t.refreshSuccess.Set(0)
		t.setBacklog(nil)
		level := slog.LevelWarn
		if t.failing {
			level = slog.LevelDebug
		}
		t.logger.LogAttrs(ctx, level, "backlog metrics refresh failed", slog.Any("err", err))
		t.failing = true
		return err
	}
	if t.failing {
		t.logger.LogAttrs(ctx, slog.LevelInfo, "backlog metrics refresh recovered")
	}
	t.failing = false
	t.refreshSuccess.Set(1)
	t.refreshTime.Set(float64(start.UnixNano()) / 1e9)
	t.refreshTrunc.Set(boolFloat(r.Truncated))
	t.groupsTrunc.Set(boolFloat(r.GroupsTruncated))
	t.syncReplication.Set(boolFloat(r.SynchronousReplication))
	t.setBacklog(&r)
	return nil
}

func (t *Telemetry) setBacklog(r *store.BacklogReading) {
	t.mu.Lock()
	t.backlog = r
	t.mu.Unlock()
}

// cachedBacklog returns the last successful reading, or nil. The reading is never
// mutated once cached, so callers may read it without the lock.
func (t *Telemetry) cachedBacklog() *store.BacklogReading {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.backlog
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
