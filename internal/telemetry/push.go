package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queenmq/queen/internal/broker"
)

// pushCollector serves how this process's pushes shared insert statements
// (QUEEN_PUSH_*), from one snapshot per scrape, and the paths its pushes and acks took.
type pushCollector struct {
	broker                               *broker.Broker
	statements, pushes, expired, waiting *prometheus.Desc
	echoes, wakeups, paths, ackPaths     *prometheus.Desc
	rechecks, ahead                      *prometheus.Desc
}

func newPushCollector(b *broker.Broker) *pushCollector {
	return &pushCollector{
		broker: b,
		statements: prometheus.NewDesc("queen_push_statements_total",
			"Insert statements this replica ran for pushes; with queen_push_statement_pushes_total, how many "+
				"pushes shared one (QUEEN_PUSH_MAX_CONCURRENT).", nil, nil),
		pushes: prometheus.NewDesc("queen_push_statement_pushes_total",
			"Pushes carried by the insert statements of queen_push_statements_total: the rate of this one "+
				"over theirs above 1 means pushes are being combined.", nil, nil),
		expired: prometheus.NewDesc("queen_push_wait_expired_total",
			"Pushes that waited QUEEN_PUSH_MAX_HOLD_MS + 20 ms for a busy push statement and then ran alone: "+
				"push statements are slow (locks, a capped queue's count).", nil, nil),
		echoes: prometheus.NewDesc("queen_push_echoes_total",
			"Statements whose pushes waited for the producers the statement before answered, and got them "+
				"back in time (QUEEN_PUSH_PREFERRED_BATCH_SIZE at 1): producers pushing flat out sharing statements.", nil, nil),
		waiting: prometheus.NewDesc("queen_push_waiting",
			"Pushes of this replica waiting for a push statement right now (all QUEEN_PUSH_MAX_CONCURRENT "+
				"busy, fewer messages than QUEEN_PUSH_PARALLEL_MIN_MESSAGES waiting beside a running one, or "+
				"held for QUEEN_PUSH_PREFERRED_BATCH_SIZE or for the producers just answered).", nil, nil),
		paths: prometheus.NewDesc("queen_push_statement_paths_total",
			"Insert statements of queen_push_statements_total by path: direct (every partition existed and no "+
				"queue had a maxSize: two plain statements) or general (creating partitions, counting a capacity; "+
				"about twice the database time per push).", []string{"path"}, nil),
		ackPaths: prometheus.NewDesc("queen_ack_statement_paths_total",
			"Ack batches this replica applied, by path: direct (the ack of a pop: one partition, one lease, "+
				"every item completed, the next messages in order; three plain statements) or general "+
				"(queen.ack_q4: every other batch).", []string{"path"}, nil),
		rechecks: prometheus.NewDesc("queen_pop_longpoll_rechecks_total",
			"Claims run by long-poll pops parked on this replica, by cause (wake: a push, an ack that ended "+
				"a lease, a wake passed on or a notification; timer: the re-check interval) and outcome (messages, empty). A push wakes one parked pop per "+
				"partition it filled and consumer group; many empty wake claims mean consumers outnumber the "+
				"work.", []string{"cause", "outcome"}, nil),
		ahead: prometheus.NewDesc("queen_pop_claimed_ahead_total",
			"Batches the acks of consumers popping in a loop claimed ahead for their next pop "+
				"(QUEEN_POP_CLAIM_AHEAD_MS), by outcome: taken (a pop took it) or given_back (no pop with the "+
				"same parameters came in time, one with other parameters came, or the broker closed).",
			[]string{"outcome"}, nil),
		wakeups: prometheus.NewDesc("queen_wakeup_notifications_total",
			"Batches of wake-ups for long-polls parked on other replicas, by outcome: sent (one NOTIFY each) "+
				"or skipped (no other replica listened).", []string{"outcome"}, nil),
	}
}

func (c *pushCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.statements, c.pushes, c.expired, c.echoes, c.waiting, c.wakeups, c.paths, c.ackPaths, c.rechecks, c.ahead} {
		ch <- d
	}
}

func (c *pushCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.broker.PushCombining()
	ch <- prometheus.MustNewConstMetric(c.statements, prometheus.CounterValue, float64(s.Statements))
	ch <- prometheus.MustNewConstMetric(c.pushes, prometheus.CounterValue, float64(s.Pushes))
	ch <- prometheus.MustNewConstMetric(c.expired, prometheus.CounterValue, float64(s.Escaped))
	ch <- prometheus.MustNewConstMetric(c.echoes, prometheus.CounterValue, float64(s.Echoed))
	ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(s.Waiting))
	direct, general := c.broker.PushPaths()
	ch <- prometheus.MustNewConstMetric(c.paths, prometheus.CounterValue, float64(direct), "direct")
	ch <- prometheus.MustNewConstMetric(c.paths, prometheus.CounterValue, float64(general), "general")
	direct, general = c.broker.AckPaths()
	ch <- prometheus.MustNewConstMetric(c.ackPaths, prometheus.CounterValue, float64(direct), "direct")
	ch <- prometheus.MustNewConstMetric(c.ackPaths, prometheus.CounterValue, float64(general), "general")
	r := c.broker.LongPollRechecks()
	ch <- prometheus.MustNewConstMetric(c.rechecks, prometheus.CounterValue, float64(r.WokenFound), "wake", "messages")
	ch <- prometheus.MustNewConstMetric(c.rechecks, prometheus.CounterValue, float64(r.WokenEmpty), "wake", "empty")
	ch <- prometheus.MustNewConstMetric(c.rechecks, prometheus.CounterValue, float64(r.TimedFound), "timer", "messages")
	ch <- prometheus.MustNewConstMetric(c.rechecks, prometheus.CounterValue, float64(r.TimedEmpty), "timer", "empty")
	a := c.broker.ClaimsAhead()
	ch <- prometheus.MustNewConstMetric(c.ahead, prometheus.CounterValue, float64(a.Taken), "taken")
	ch <- prometheus.MustNewConstMetric(c.ahead, prometheus.CounterValue, float64(a.GivenBack), "given_back")
	w := c.broker.WakeNotifications()
	ch <- prometheus.MustNewConstMetric(c.wakeups, prometheus.CounterValue, float64(w.Sent), "sent")
	ch <- prometheus.MustNewConstMetric(c.wakeups, prometheus.CounterValue, float64(w.Skipped), "skipped")
}
