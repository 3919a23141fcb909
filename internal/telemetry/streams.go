package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queenmq/queen/internal/broker"
)

// streamCollector serves the broker's stream counters (cycles, state ops, sink
// pushes, state reads) of this process.
type streamCollector struct {
	broker                      *broker.Broker
	cycles, stateOps, sink, get *prometheus.Desc
}

func newStreamCollector(b *broker.Broker) *streamCollector {
	return &streamCollector{
		broker: b,
		cycles: prometheus.NewDesc("queen_stream_cycles_total",
			"Stream cycles (POST /streams/v1/cycle) served by this process, by result: committed; failed "+
				"(refused and rolled back: stale lease, full sink, ack of a message already acknowledged …); "+
				"error (invalid input or a database failure).", []string{"result"}, nil),
		stateOps: prometheus.NewDesc("queen_stream_state_ops_total",
			"State ops of committed stream cycles, by type (upsert, delete).", []string{"type"}, nil),
		sink: prometheus.NewDesc("queen_stream_sink_pushes_total",
			"Sink push items of committed stream cycles, by status (queued, duplicate).", []string{"status"}, nil),
		get: prometheus.NewDesc("queen_stream_state_reads_total",
			"State reads (POST /streams/v1/state/get) answered by this process.", nil, nil),
	}
}

func (c *streamCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.cycles, c.stateOps, c.sink, c.get} {
		ch <- d
	}
}

func (c *streamCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.broker.StreamCounters()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(c.cycles, s.CyclesCommitted, "committed")
	counter(c.cycles, s.CyclesFailed, "failed")
	counter(c.cycles, s.CyclesError, "error")
	counter(c.stateOps, s.StateUpserts, "upsert")
	counter(c.stateOps, s.StateDeletes, "delete")
	counter(c.sink, s.SinkQueued, "queued")
	counter(c.sink, s.SinkDuplicate, "duplicate")
	counter(c.get, s.StateReads)
}
