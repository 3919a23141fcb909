package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queenmq/queen/internal/store"
)

// backlogCollector serves the cached backlog reading; it runs no SQL.
type backlogCollector struct {
	t                                           *Telemetry
	messages, dlq, dlqByQueue, dlqDepth, oldest *prometheus.Desc
	groupLag, groupLagSeconds, groupInFlight    *prometheus.Desc
}

func newBacklogCollector(t *Telemetry) *backlogCollector {
	return &backlogCollector{
		t: t,
		messages: prometheus.NewDesc("queen_queue_messages",
			"Messages of a queue by state, in queue mode: pending (past the cursor, not leased), "+
				"processing (leased, not yet acknowledged) and total (stored). Cached by the backlog refresh.",
			[]string{"queue", "state"}, nil),
		dlq: prometheus.NewDesc("queen_queue_dlq_messages",
			"Dead-letter entries of a queue (every consumer group). Cached by the backlog refresh.",
			[]string{"queue"}, nil),
		dlqByQueue: prometheus.NewDesc("queen_dlq_depth_by_queue",
			"Dead-letter entries of a queue; upstream's name for queen_queue_dlq_messages.",
			[]string{"queue"}, nil),
		dlqDepth: prometheus.NewDesc("queen_dlq_depth",
			"Dead-letter entries of the whole cluster (upstream name). Cached by the backlog refresh.",
			[]string{"scope"}, nil),
		oldest: prometheus.NewDesc("queen_queue_oldest_pending_age_seconds",
			"Age of the oldest message of a queue not yet acknowledged in queue mode (its consumer lag); "+
				"0 when nothing is pending. Cached by the backlog refresh.",
			[]string{"queue"}, nil),
		groupLag: prometheus.NewDesc("queen_consumer_group_lag_messages",
			"Messages of a queue a consumer group (queue mode: __QUEUE_MODE__) has not consumed yet, leased ones "+
				"included, over every partition (one without the group's cursor owes what the group will read there). "+
				"Cached by the backlog refresh.",
			[]string{"queue", "group"}, nil),
		groupLagSeconds: prometheus.NewDesc("queen_consumer_group_lag_seconds",
			"Age of the oldest message of a queue a consumer group has not consumed yet; 0 when it is caught up. "+
				"Cached by the backlog refresh.",
			[]string{"queue", "group"}, nil),
		groupInFlight: prometheus.NewDesc("queen_consumer_group_in_flight",
			"Messages of a queue leased to a consumer group and not yet acknowledged (live leases only). "+
				"Cached by the backlog refresh.",
			[]string{"queue", "group"}, nil),
	}
}

func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.messages, c.dlq, c.dlqByQueue, c.dlqDepth, c.oldest,
		c.groupLag, c.groupLagSeconds, c.groupInFlight} {
		ch <- d
	}
}

func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.t.cachedBacklog()
	if r == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, q := range r.Queues {
		gauge(c.messages, float64(q.Pending), q.Name, "pending")
		gauge(c.messages, float64(q.Processing), q.Name, "processing")
		gauge(c.messages, float64(q.Total), q.Name, "total")
		gauge(c.dlq, float64(q.DeadLetter), q.Name)
		gauge(c.dlqByQueue, float64(q.DeadLetter), q.Name)
		gauge(c.oldest, q.OldestPendingAge.Seconds(), q.Name)
	}
	gauge(c.dlqDepth, float64(r.DeadLetterTotal), "cluster")
	for _, g := range r.Groups {
		gauge(c.groupLag, float64(g.TotalLag), g.Queue, g.Group)
		gauge(c.groupLagSeconds, g.MaxTimeLag.Seconds(), g.Queue, g.Group)
		gauge(c.groupInFlight, float64(g.InFlight), g.Queue, g.Group)
	}
}

// poolCollector reads the pgx pool's in-memory statistics at scrape time.
type poolCollector struct {
	store                                              *store.Store
	max, conns, size, idle, active, waits, waitSeconds *prometheus.Desc
}

func newPoolCollector(st *store.Store) *poolCollector {
	return &poolCollector{
		store: st,
		max: prometheus.NewDesc("queen_db_pool_max_connections",
			"Maximum connections of the PostgreSQL pool (DB_POOL_SIZE).", nil, nil),
		conns: prometheus.NewDesc("queen_db_pool_connections",
			"Open connections of the PostgreSQL pool by state (idle or acquired).", []string{"state"}, nil),
		size: prometheus.NewDesc("queen_db_pool_size",
			"Capacity of the PostgreSQL pool (upstream name; equals queen_db_pool_max_connections, "+
				"connections are opened lazily).", nil, nil),
		idle: prometheus.NewDesc("queen_db_pool_idle",
			"Idle connections of the PostgreSQL pool (upstream name).", nil, nil),
		active: prometheus.NewDesc("queen_db_pool_active",
			"Connections of the PostgreSQL pool in use (upstream name).", nil, nil),
		waits: prometheus.NewDesc("queen_db_pool_acquire_waits_total",
			"Connection acquisitions that had to wait because no idle connection was available.", nil, nil),
		waitSeconds: prometheus.NewDesc("queen_db_pool_acquire_wait_seconds_total",
			"Cumulative time spent waiting for a pool connection.", nil, nil),
	}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.max, c.conns, c.size, c.idle, c.active, c.waits, c.waitSeconds} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.store.Stats()
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	gauge(c.max, st.MaxConns)
	gauge(c.conns, st.IdleConns, "idle")
	gauge(c.conns, st.AcquiredConns, "acquired")
	gauge(c.size, st.MaxConns)
	gauge(c.idle, st.IdleConns)
	gauge(c.active, st.AcquiredConns)
	n, wait := c.store.PoolWaits()
	ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(n))
	ch <- prometheus.MustNewConstMetric(c.waitSeconds, prometheus.CounterValue, wait.Seconds())
}
