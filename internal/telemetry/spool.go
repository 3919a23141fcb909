package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queenmq/queen/internal/broker"
)

// spoolCollector serves this replica's disk spool from the spool's in-memory
// statistics (no I/O, no SQL), under queen's names and upstream's file-buffer names.
type spoolCollector struct {
	broker                                             *broker.Broker
	pending, bytes, oldest, failed, segments, corrupt  *prometheus.Desc
	healthy, appended, drained, writeErrs              *prometheus.Desc
	upstreamPending, upstreamFailed, upstreamDBHealthy *prometheus.Desc
}

func newSpoolCollector(b *broker.Broker) *spoolCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &spoolCollector{
		broker: b,
		pending: d("queen_spool_pending_records",
			"Pushes in this replica's disk spool waiting to be replayed into PostgreSQL."),
		bytes: d("queen_spool_bytes", "Bytes of the spool's pending records."),
		oldest: d("queen_spool_oldest_age_seconds",
			"How long the oldest pending spool record has waited; 0 when the spool is empty."),
		failed: d("queen_spool_failed_records",
			"Spool records PostgreSQL refused, kept in FILE_BUFFER_DIR/dead/quarantine-*.spool."),
		segments: d("queen_spool_segments", "Spool files holding pending records."),
		corrupt: d("queen_spool_corrupt_regions_total",
			"Torn or damaged spool ranges skipped since the process started, those found at start-up included "+
				"(the records around them are replayed)."),
		healthy:  d("queen_spool_healthy", "1 while the spool can be written; 0 from a failed write until it can be again, rechecked every second (pushes that need the spool get 503)."),
		appended: d("queen_spool_appended_records_total", "Records written to the spool since the process started."),
		drained:  d("queen_spool_replayed_records_total", "Spool records replayed (or quarantined) since the process started."),
		writeErrs: d("queen_spool_write_errors_total",
			"Spool appends that failed (disk full, read-only, I/O error): each answered a push with 503."),
		upstreamPending:   d("queen_file_buffer_pending", "Upstream name for queen_spool_pending_records."),
		upstreamFailed:    d("queen_file_buffer_failed", "Upstream name for queen_spool_failed_records."),
		upstreamDBHealthy: d("queen_file_buffer_db_healthy", "1 when the last push or replay of this replica reached PostgreSQL (upstream name)."),
	}
}

func (c *spoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pending, c.bytes, c.oldest, c.failed, c.segments, c.corrupt,
		c.healthy, c.appended, c.drained, c.writeErrs, c.upstreamPending, c.upstreamFailed, c.upstreamDBHealthy} {
		ch <- d
	}
}

func (c *spoolCollector) Collect(ch chan<- prometheus.Metric) {
	st, ok := c.broker.SpoolStats()
	if !ok {
		return
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	var age float64
	if !st.OldestPending.IsZero() {
		age = max(time.Since(st.OldestPending).Seconds(), 0)
	}
	gauge(c.pending, float64(st.PendingRecords))
	gauge(c.bytes, float64(st.PendingBytes))
	gauge(c.oldest, age)
	gauge(c.failed, float64(st.QuarantinedRecords))
	gauge(c.segments, float64(st.Segments))
	counter(c.corrupt, float64(st.CorruptRegions))
	gauge(c.healthy, boolFloat(st.Healthy))
	counter(c.appended, float64(st.Appended))
	counter(c.drained, float64(st.Drained))
	counter(c.writeErrs, float64(st.WriteErrors))
	gauge(c.upstreamPending, float64(st.PendingRecords))
	gauge(c.upstreamFailed, float64(st.QuarantinedRecords))
	gauge(c.upstreamDBHealthy, boolFloat(c.broker.DatabaseReachable()))
}
