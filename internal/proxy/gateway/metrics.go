package gateway

import "github.com/prometheus/client_golang/prometheus"

// metrics are the gateway's Prometheus series (served on the admin listener only:
// tenant ids are labels).
type metrics struct {
	requests        *prometheus.CounterVec
	duration        *prometheus.HistogramVec
	tenantRequests  *prometheus.CounterVec
	tenantMessages  *prometheus.CounterVec
	tenantBytes     *prometheus.CounterVec
	tenantAcks      *prometheus.CounterVec
	storedMessages  *prometheus.GaugeVec
	storedBytes     *prometheus.GaugeVec
	inflight        prometheus.Gauge
	parked          prometheus.Gauge
	held            prometheus.Gauge
	authFailures    *prometheus.CounterVec
	backendUp       *prometheus.GaugeVec
	snapshotAgeSecs prometheus.GaugeFunc
}

func newMetrics(reg prometheus.Registerer, snapshotAge func() float64) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "queen_proxy_http_requests_total",
			Help: "Requests on the public listener, by route pattern and status."}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "queen_proxy_http_request_duration_seconds",
			Help: "Time to answer a request, by route pattern.", Buckets: prometheus.DefBuckets}, []string{"route"}),
		tenantRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "queen_proxy_tenant_requests_total",
			Help: "Tenant requests by outcome."}, []string{"tenant", "result"}),
		tenantMessages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "queen_proxy_tenant_messages_total",
			Help: "Messages pushed (in) and popped (out) per tenant."}, []string{"tenant", "direction"}),
		tenantBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "queen_proxy_tenant_bytes_total",
			Help: "HTTP body bytes per tenant and direction."}, []string{"tenant", "direction"}),
		tenantAcks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "queen_proxy_tenant_acks_total",
			Help: "Acknowledged items per tenant."}, []string{"tenant"}),
		storedMessages: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "queen_proxy_tenant_stored_messages",
			Help: "Stored messages per tenant, from the latest usage snapshot."}, []string{"tenant"}),
		storedBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "queen_proxy_tenant_stored_bytes",
			Help: "Stored payload bytes per tenant, from the latest usage snapshot."}, []string{"tenant"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "queen_proxy_inflight_requests",
			Help: "Requests being forwarded."}),
		parked: prometheus.NewGauge(prometheus.GaugeOpts{Name: "queen_proxy_parked_longpolls",
			Help: "Pops waiting at a broker."}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{Name: "queen_proxy_held_requests",
			Help: "Requests of tenants being moved, waiting for the move's pause to end."}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "queen_proxy_auth_failures_total",
			Help: "Refused credentials by reason."}, []string{"reason"}),
		backendUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "queen_proxy_upstream_up",
			Help: "Broker health: 1 up, 0 down, 2 misconfigured."}, []string{"upstream"}),
		snapshotAgeSecs: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "queen_proxy_usage_snapshot_age_seconds",
			Help: "Age of the usage snapshot behind quotas."}, snapshotAge),
	}
	reg.MustRegister(m.requests, m.duration, m.tenantRequests, m.tenantMessages, m.tenantBytes, m.tenantAcks,
		m.storedMessages, m.storedBytes, m.inflight, m.parked, m.held, m.authFailures, m.backendUp, m.snapshotAgeSecs)
	return m
}
