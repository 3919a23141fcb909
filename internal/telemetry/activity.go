package telemetry

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queenmq/queen/internal/broker"
)

// activityTotals are the lifetime operation counters of this process that the rate
// log turns into per-second rates.
type activityTotals struct {
	pushed, popped, acked int64
}

// readActivity returns the broker's lifetime message counters.
func (t *Telemetry) readActivity() activityTotals {
	c := t.broker.Analytics().Activity().Total
	return activityTotals{pushed: c.PushMessages, popped: c.PopMessages, acked: c.AckMessages}
}

// brokerCollectors are the families fed by the broker's in-memory activity recorder
// and its maintenance flags.
func (t *Telemetry) brokerCollectors() []prometheus.Collector {
	return []prometheus.Collector{
		newActivityCollector(t.broker),
		newSpoolCollector(t.broker),
		newStreamCollector(t.broker),
		newPushCollector(t.broker),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "maintenance_mode_enabled",
			Help: "1 while push maintenance mode is on, as this replica last read it: pushes go to the disk spool (upstream name).",
		}, func() float64 {
			push, _ := t.broker.Paused()
			return boolFloat(push)
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "pop", Name: "maintenance_mode_enabled",
			Help: "1 while pop maintenance mode is on, as this replica last read it: pops answer empty at once.",
		}, func() float64 {
			_, pop := t.broker.Paused()
			return boolFloat(pop)
		}),
	}
}

// activityCollector turns the broker's activity snapshot into counters at scrape
// time. The per-queue families cover the first MaxQueues queue names the recorder
// keeps totals for (those that moved a message), so a queue's series stay stable
// while the set of queues does.
type activityCollector struct {
	broker                                  *broker.Broker
	pushed, popped, acked, deadLettered     *prometheus.Desc
	requests, dbErrors, pendingMin, dropped *prometheus.Desc
}

func newActivityCollector(b *broker.Broker) *activityCollector {
	q := []string{"queue"}
	return &activityCollector{
		broker: b,
		pushed: prometheus.NewDesc("queen_messages_pushed_total",
			"Messages stored by pushes and transactions of this process (duplicates excluded).", q, nil),
		popped: prometheus.NewDesc("queen_messages_popped_total",
			"Messages delivered by pops of this process.", q, nil),
		acked: prometheus.NewDesc("queen_messages_acked_total",
			"Acknowledged messages by result: success completed the message; failed counts negative "+
				"acks (failed, dlq, retry) and refused ones.", []string{"queue", "result"}, nil),
		deadLettered: prometheus.NewDesc("queen_messages_dead_lettered_total",
			"Messages this process moved to the dead-letter queue.", q, nil),
		requests: prometheus.NewDesc("queen_requests_total",
			"Broker operations served by this process, by op: push, pop, ack, transaction.", []string{"op"}, nil),
		dbErrors: prometheus.NewDesc("queen_db_errors_total",
			"Broker operations of this process that failed in the database.", nil, nil),
		pendingMin: prometheus.NewDesc("queen_activity_pending_buckets",
			"One-minute buckets of analytics counters held in memory, not yet written to PostgreSQL "+
				"(normally 0 or 1).", nil, nil),
		dropped: prometheus.NewDesc("queen_activity_dropped_buckets_total",
			"One-minute buckets of analytics counters dropped because PostgreSQL refused them for too long "+
				"(the dashboard's history has a gap).", nil, nil),
	}
}

func (c *activityCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pushed, c.popped, c.acked, c.deadLettered, c.requests, c.dbErrors,
		c.pendingMin, c.dropped} {
		ch <- d
	}
}

func (c *activityCollector) Collect(ch chan<- prometheus.Metric) {
	snap := c.broker.Analytics().Activity()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	names := slices.Sorted(maps.Keys(snap.Queues))
	for _, name := range names[:min(len(names), MaxQueues)] {
		q := snap.Queues[name]
		counter(c.pushed, q.PushMessages, name)
		counter(c.popped, q.PopMessages, name)
		counter(c.acked, q.AckSuccess, name, "success")
		counter(c.acked, q.AckFailed, name, "failed")
		counter(c.deadLettered, q.DLQ, name)
	}
	tot := snap.Total
	counter(c.requests, tot.PushRequests, "push")
	counter(c.requests, tot.PopRequests, "pop")
	counter(c.requests, tot.AckRequests, "ack")
	counter(c.requests, tot.Transactions, "transaction")
	counter(c.dbErrors, tot.DBErrors)
	ch <- prometheus.MustNewConstMetric(c.pendingMin, prometheus.GaugeValue, float64(snap.PendingMinutes))
	counter(c.dropped, snap.DroppedMinutes)
}
