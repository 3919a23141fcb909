package daemon

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queenmq/queen/internal/proxy/store"
)

// poolCollector reads the proxy database pool's statistics at scrape time.
type poolCollector struct {
	store                                   *store.Store
	max, conns, waits, waitSeconds, silence *prometheus.Desc
	timeline, timelineBehind, regressions   *prometheus.Desc
}

func newPoolCollector(st *store.Store) *poolCollector {
	return &poolCollector{
		store: st,
		max: prometheus.NewDesc("queen_proxy_db_pool_max_connections",
			"Capacity of the proxy database's pool (DB_POOL_SIZE).", nil, nil),
		conns: prometheus.NewDesc("queen_proxy_db_pool_connections",
			"Open connections of the proxy database's pool by state: idle or acquired. Connections are "+
				"opened on demand, so idle + acquired may be below the capacity.", []string{"state"}, nil),
		waits: prometheus.NewDesc("queen_proxy_db_pool_acquire_waits_total",
			"Connection acquisitions that had to wait because no connection was idle (this includes waiting "+
				"for a new connection to open).", nil, nil),
		waitSeconds: prometheus.NewDesc("queen_proxy_db_pool_acquire_wait_seconds_total",
			"Time spent in the waits of queen_proxy_db_pool_acquire_waits_total.", nil, nil),
		silence: prometheus.NewDesc("queen_proxy_db_unanswered_statements_total",
			"Connections closed because the proxy database had not answered a statement within "+
				"DB_STATEMENT_TIMEOUT plus 5 s: a server alive but silent (stopped, paused, or a commit "+
				"waiting for a synchronous standby that is gone). Their requests were answered 503.", nil, nil),
		timeline: prometheus.NewDesc("queen_proxy_db_timeline",
			"The proxy database primary's timeline, as the newest connection to it found it (0 until known). "+
				"It grows with each promotion of a standby.", nil, nil),
		timelineBehind: prometheus.NewDesc("queen_proxy_db_timeline_behind",
			"1 while the newest connection found the proxy database's primary on an earlier timeline than one a "+
				"connection to the same database cluster found before: a former primary takes writes again.", nil, nil),
		regressions: prometheus.NewDesc("queen_proxy_db_timeline_regressions_total",
			"New connections that found the proxy database's primary on an earlier timeline than one a connection "+
				"to the same database cluster found before (counted once per timeline): a former primary takes "+
				"writes again, and what was committed on the later timeline (tenants, keys, sessions, usage) is not "+
				"on it.", nil, nil),
	}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.max, c.conns, c.waits, c.waitSeconds, c.silence, c.timeline, c.timelineBehind,
		c.regressions} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.store.PoolStats()
	ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(st.MaxConns))
	ch <- prometheus.MustNewConstMetric(c.conns, prometheus.GaugeValue, float64(st.IdleConns), "idle")
	ch <- prometheus.MustNewConstMetric(c.conns, prometheus.GaugeValue, float64(st.AcquiredConns), "acquired")
	ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(st.AcquireWaits))
	ch <- prometheus.MustNewConstMetric(c.waitSeconds, prometheus.CounterValue, st.AcquireWait.Seconds())
	ch <- prometheus.MustNewConstMetric(c.silence, prometheus.CounterValue, float64(st.Unanswered))
	ch <- prometheus.MustNewConstMetric(c.timeline, prometheus.GaugeValue, float64(st.Timeline))
	behind := 0.0
	if st.TimelineBehind {
		behind = 1
	}
	ch <- prometheus.MustNewConstMetric(c.timelineBehind, prometheus.GaugeValue, behind)
	ch <- prometheus.MustNewConstMetric(c.regressions, prometheus.CounterValue, float64(st.TimelineRegressions))
}
