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
			"Messages of a queue by state, seen through the queue-mode cursor: pending (past the cursor and "+
				"not leased: the depth), processing (leased, not yet acknowledged) and total (stored, consumed or "+
				"not; retention decides when they go). Cached by the backlog refresh.",
			[]string{"queue", "state"}, nil),
		dlq: prometheus.NewDesc("queen_queue_dlq_messages",
			"Dead-letter entries of a queue (every consumer group). Cached by the backlog refresh.",
			[]string{"queue"}, nil),
		dlqByQueue: prometheus.NewDesc("queen_dlq_depth_by_queue",
			"Dead-letter entries of a queue: upstream's name for queen_queue_dlq_messages, same value.",
			[]string{"queue"}, nil),
		dlqDepth: prometheus.NewDesc("queen_dlq_depth",
			"Dead-letter entries of the whole cluster, every queue included; one series, scope=\"cluster\" "+
				"(upstream name). Cached by the backlog refresh.",
			[]string{"scope"}, nil),
		oldest: prometheus.NewDesc("queen_queue_oldest_pending_age_seconds",
			"Age of the oldest message of a queue not yet acknowledged in queue mode (pending or processing): "+
				"the queue's consumer lag; 0 when nothing is pending. Measured with the database clock; "+
				"cached by the backlog refresh.",
			[]string{"queue"}, nil),
		groupLag: prometheus.NewDesc("queen_consumer_group_lag_messages",
			"Messages of a queue a consumer group (queue mode: __QUEUE_MODE__) has not consumed yet, leased ones "+
				"included, over every partition (one without the group's cursor owes what the group will read there); "+
				"messages past an enforced ttl are not counted. Cached by the backlog refresh.",
			[]string{"queue", "group"}, nil),
		groupLagSeconds: prometheus.NewDesc("queen_consumer_group_lag_seconds",
			"Age of the oldest message of a queue a consumer group has not consumed yet; 0 when it is caught up. "+
				"Cached by the backlog refresh.",
			[]string{"queue", "group"}, nil),
		groupInFlight: prometheus.NewDesc("queen_consumer_group_in_flight",
			"Messages of a queue leased to a consumer group and not yet acknowledged (live leases only); "+
				"lag_messages minus in_flight is what waits for a consumer. Cached by the backlog refresh.",
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
	unanswered, timeline, timelineBehind, regressions  *prometheus.Desc
	commitsStalled, stalledStatements                  *prometheus.Desc
}

func newPoolCollector(st *store.Store) *poolCollector {
	return &poolCollector{
		store: st,
		max: prometheus.NewDesc("queen_db_pool_max_connections",
			"Capacity of the PostgreSQL pool (DB_POOL_SIZE).", nil, nil),
		conns: prometheus.NewDesc("queen_db_pool_connections",
			"Open connections of the PostgreSQL pool by state: idle or acquired. Connections are opened on "+
				"demand, so idle + acquired may be below the capacity.", []string{"state"}, nil),
		size: prometheus.NewDesc("queen_db_pool_size",
			"Upstream name for the capacity of the PostgreSQL pool (same value as queen_db_pool_max_connections).",
			nil, nil),
		idle: prometheus.NewDesc("queen_db_pool_idle",
			"Upstream name for queen_db_pool_connections{state=\"idle\"}.", nil, nil),
		active: prometheus.NewDesc("queen_db_pool_active",
			"Upstream name for queen_db_pool_connections{state=\"acquired\"}.", nil, nil),
		waits: prometheus.NewDesc("queen_db_pool_acquire_waits_total",
			"Connection acquisitions that had to wait because no connection was idle (this includes waiting "+
				"for a new connection to open).", nil, nil),
		waitSeconds: prometheus.NewDesc("queen_db_pool_acquire_wait_seconds_total",
			"Time spent in the waits of queen_db_pool_acquire_waits_total.", nil, nil),
		unanswered: prometheus.NewDesc("queen_db_unanswered_statements_total",
			"Connections closed because PostgreSQL had not answered a statement within "+
				"LIBQUEEN_INFLIGHT_DEADLINE_MS (by default DB_STATEMENT_TIMEOUT plus 5 s): a server alive but silent "+
				"(stopped, paused). Their pushes went to the spool.", nil, nil),
		commitsStalled: prometheus.NewDesc("queen_db_commits_stalled",
			"1 while PostgreSQL holds commits for a synchronous standby that does not confirm them: from the "+
				"first statement ended for it (QUEEN_DB_COMMIT_STALL_MS) until a commit is confirmed again. "+
				"Pushes go to the spool meanwhile.", nil, nil),
		stalledStatements: prometheus.NewDesc("queen_db_stalled_statements_total",
			"Statements ended because PostgreSQL held their commit for a synchronous standby (or they waited "+
				"for a lock such a commit held) longer than QUEEN_DB_COMMIT_STALL_MS. Their pushes went to the "+
				"spool; other requests were answered 503.", nil, nil),
		timeline: prometheus.NewDesc("queen_db_timeline",
			"The PostgreSQL primary's timeline, as the broker's newest connection to it found it (0 until "+
				"known). It grows with each promotion of a standby.", nil, nil),
		timelineBehind: prometheus.NewDesc("queen_db_timeline_behind",
			"1 while the newest connection found the primary on an earlier timeline than one a connection to "+
				"the same database cluster found before: a former primary takes writes again.", nil, nil),
		regressions: prometheus.NewDesc("queen_db_timeline_regressions_total",
			"New connections that found the primary on an earlier timeline than one a connection to the same "+
				"database cluster found before (counted once per timeline): a former primary takes writes again, "+
				"and what was committed on the later timeline, acknowledged messages among it, is not on it.", nil, nil),
	}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.max, c.conns, c.size, c.idle, c.active, c.waits, c.waitSeconds, c.unanswered,
		c.timeline, c.timelineBehind, c.regressions, c.commitsStalled, c.stalledStatements} {
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
	ch <- prometheus.MustNewConstMetric(c.unanswered, prometheus.CounterValue, float64(st.Unanswered))
	ch <- prometheus.MustNewConstMetric(c.timeline, prometheus.GaugeValue, float64(st.Timeline))
	ch <- prometheus.MustNewConstMetric(c.timelineBehind, prometheus.GaugeValue, boolFloat(st.TimelineBehind))
	ch <- prometheus.MustNewConstMetric(c.regressions, prometheus.CounterValue, float64(st.TimelineRegressions))
	ch <- prometheus.MustNewConstMetric(c.commitsStalled, prometheus.GaugeValue, boolFloat(st.CommitsStalled))
	ch <- prometheus.MustNewConstMetric(c.stalledStatements, prometheus.CounterValue, float64(st.StalledStatements))
}
