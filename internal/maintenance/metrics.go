package maintenance

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the runner's families, registered on the registerer the daemon passes.
type metrics struct {
	runs        *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	rows        *prometheus.CounterVec
	lastSuccess *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "queen", Subsystem: "maintenance", Name: "runs_total",
			Help: "Maintenance job cycles on this replica by job and result: success, error, skipped_locked " +
				"(another replica is running the job) or skipped_not_due (another replica already ran this cycle).",
		}, []string{"job", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "queen", Subsystem: "maintenance", Name: "run_duration_seconds",
			Help:    "Duration of the maintenance job runs of this replica, successful or failed.",
			Buckets: []float64{0.005, 0.025, 0.1, 0.5, 2, 10, 60, 300},
		}, []string{"job"}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "queen", Subsystem: "maintenance", Name: "rows_total",
			Help: "Rows deleted or updated by the maintenance jobs of this replica.",
		}, []string{"job"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "queen", Subsystem: "maintenance", Name: "last_success_timestamp_seconds",
			Help: "Unix time of this replica's last successful run of the job (absent until one).",
		}, []string{"job"}),
	}
	for _, c := range []prometheus.Collector{m.runs, m.duration, m.rows, m.lastSuccess} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observe(job string, out Outcome, res Result, took time.Duration) {
	m.runs.WithLabelValues(job, string(out)).Inc()
	m.duration.WithLabelValues(job).Observe(took.Seconds())
	m.rows.WithLabelValues(job).Add(float64(res.Rows))
	if out == OutcomeSuccess {
		m.lastSuccess.WithLabelValues(job).SetToCurrentTime()
	}
}
