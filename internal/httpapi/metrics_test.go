package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/store"
	"github.com/queenmq/queen/internal/telemetry"
)

// metricsBundle is a server whose registry also carries the broker's telemetry and
// the Go and process collectors, as the daemon builds it.
type metricsBundle struct {
	*testBundle
	reg *prometheus.Registry
	tel *telemetry.Telemetry
}

func setupMetrics(t *testing.T) *metricsBundle {
	t.Helper()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	logger := testLogger(t)
	b := broker.New(broker.DefaultConfig(), st, logger)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	tel, err := telemetry.New(reg, telemetry.Options{Broker: b, Store: st, Logger: logger})
	require.NoError(t, err)
	srv := httptest.NewServer(New(Options{Registry: reg}, b, logger).Handler())
	t.Cleanup(srv.Close)
	return &metricsBundle{testBundle: &testBundle{srv: srv, broker: b}, reg: reg, tel: tel}
}

// families is one parsed scrape.
type families map[string]*dto.MetricFamily

// scrape fetches /metrics/prometheus through the router and parses it.
func (b *metricsBundle) scrape(t *testing.T) families {
	t.Helper()
	r := b.get(t, "/metrics/prometheus")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, contentTypeText, r.header.Get("Content-Type"))
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(r.body))
	require.NoError(t, err, "exposition:\n%s", r.body)
	return mfs
}

// value returns the sample of family name whose labels include labels (name=value
// pairs), failing when there is none.
func (f families) value(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	v, ok := f.lookup(name, labels...)
	require.True(t, ok, "no sample %s%v", name, labels)
	return v
}

func (f families) has(name string) bool {
	_, ok := f[name]
	return ok
}

func (f families) lookup(name string, labels ...string) (float64, bool) {
	mf, ok := f[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), true
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true
		case m.GetHistogram() != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// The families every scrape has once one request was answered.
var alwaysThere = []string{
	"queen_uptime_seconds", "queen_pop_longpolls_parked",
	"queen_db_pool_max_connections", "queen_db_pool_connections", "queen_db_pool_size", "queen_db_pool_idle",
	"queen_db_pool_active", "queen_db_pool_acquire_waits_total", "queen_db_pool_acquire_wait_seconds_total",
	"queen_metrics_refresh_duration_seconds", "queen_metrics_refresh_success", "queen_metrics_refresh_timestamp_seconds",
	"queen_metrics_refresh_truncated",
	"queen_http_requests_total", "queen_http_request_duration_seconds", "queen_http_requests_in_flight",
	"queen_requests_total", "queen_db_errors_total", "queen_activity_pending_buckets", "queen_activity_dropped_buckets_total",
	"queen_maintenance_mode_enabled", "queen_pop_maintenance_mode_enabled",
	"go_goroutines",
}

// The backlog families, served from the cache once a refresh succeeded.
var backlogFamilies = []string{
	"queen_queue_messages", "queen_queue_dlq_messages", "queen_dlq_depth_by_queue", "queen_dlq_depth",
	"queen_queue_oldest_pending_age_seconds",
}

func TestMetricsPrometheus(t *testing.T) {
	t.Parallel()

	t.Run("ServesExpectedFamilies", func(t *testing.T) {
		t.Parallel()
		b := setupMetrics(t)
		requireStatus(t, http.StatusOK, b.get(t, "/health"))

		f := b.scrape(t)
		for _, name := range alwaysThere {
			require.True(t, f.has(name), "family %s", name)
		}
		for _, name := range backlogFamilies {
			require.False(t, f.has(name), "%s: no refresh has run, the backlog families are omitted", name)
		}
		require.Equal(t, 0.0, f.value(t, "queen_metrics_refresh_success"))
		require.Equal(t, 8.0, f.value(t, "queen_db_pool_max_connections"))
		require.Equal(t, 8.0, f.value(t, "queen_db_pool_size"))
		require.Equal(t, 1.0, f.value(t, "queen_http_requests_total", "route", "/health", "method", "GET", "code", "200"))
		require.Equal(t, 1.0, f.value(t, "queen_http_requests_in_flight"), "the scrape itself is in flight")

		requireStatus(t, http.StatusCreated, b.post(t, "/api/v1/push", `{"items":[{"queue":"metrics-families","payload":1}]}`))
		require.NoError(t, b.tel.Refresh(t.Context()))
		f = b.scrape(t)
		for _, name := range backlogFamilies {
			require.True(t, f.has(name), "family %s", name)
		}
		require.Equal(t, 1.0, f.value(t, "queen_metrics_refresh_success"))
		require.Equal(t, 0.0, f.value(t, "queen_dlq_depth", "scope", "cluster"))
		require.Equal(t, 1.0, f.value(t, "queen_http_requests_total", "route", "/metrics/prometheus", "method", "GET", "code", "200"))
	})

	t.Run("CountersAndGaugesChangeWithTraffic", func(t *testing.T) {
		t.Parallel()
		b := setupMetrics(t)
		const q = "metrics-traffic"
		requireStatus(t, http.StatusCreated, b.post(t, "/api/v1/push",
			`{"items":[{"queue":"metrics-traffic","payload":1},{"queue":"metrics-traffic","payload":2},{"queue":"metrics-traffic","payload":3}]}`))
		require.NoError(t, b.tel.Refresh(t.Context()))
		before := b.scrape(t)
		require.Equal(t, 3.0, before.value(t, "queen_queue_messages", "queue", q, "state", "pending"))
		require.Equal(t, 3.0, before.value(t, "queen_queue_messages", "queue", q, "state", "total"))
		require.Equal(t, 0.0, before.value(t, "queen_queue_messages", "queue", q, "state", "processing"))
		require.Equal(t, 0.0, before.value(t, "queen_queue_dlq_messages", "queue", q))
		require.Equal(t, 1.0, before.value(t, "queen_http_requests_total", "route", "/api/v1/push", "method", "POST", "code", "201"))
		require.Equal(t, 3.0, before.value(t, "queen_messages_pushed_total", "queue", q))
		require.Equal(t, 1.0, before.value(t, "queen_requests_total", "op", "push"))
		require.Equal(t, 0.0, before.value(t, "queen_requests_total", "op", "pop"))

		pop := b.popOne(t, q, "batch=2")
		msgs := pop["messages"].([]any)
		require.Len(t, msgs, 2)
		acks := make([]string, 2)
		for i, status := range []string{"completed", "dlq"} {
			m := msgs[i].(map[string]any)
			acks[i] = fmt.Sprintf(`{"transactionId":%q,"partitionId":%q,"leaseId":%q,"status":%q}`,
				m["transactionId"], m["partitionId"], pop["leaseId"], status)
		}
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/ack/batch", `{"acknowledgments":[`+strings.Join(acks, ",")+`]}`))
		requireStatus(t, http.StatusNotFound, b.get(t, "/no/such/path"))
		// Refused before the router (a cross-origin write): counted under its route.
		requireStatus(t, http.StatusForbidden, b.do(t, http.MethodPost, "/api/v1/push", `{"items":[]}`,
			"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"))

		require.NoError(t, b.tel.Refresh(t.Context()))
		after := b.scrape(t)
		require.Equal(t, 1.0, after.value(t, "queen_queue_messages", "queue", q, "state", "pending"))
		require.Equal(t, 3.0, after.value(t, "queen_queue_messages", "queue", q, "state", "total"))
		require.Equal(t, 0.0, after.value(t, "queen_queue_messages", "queue", q, "state", "processing"))
		require.Equal(t, 1.0, after.value(t, "queen_queue_dlq_messages", "queue", q))
		require.Equal(t, 1.0, after.value(t, "queen_dlq_depth_by_queue", "queue", q))
		require.Equal(t, 1.0, after.value(t, "queen_dlq_depth", "scope", "cluster"))
		require.Equal(t, 1.0, after.value(t, "queen_http_request_duration_seconds", "route", "/api/v1/pop/queue/{queue}", "method", "GET"),
			"the pop is timed under its route pattern, not its path")
		require.Equal(t, 1.0, after.value(t, "queen_http_requests_total", "route", "/api/v1/ack/batch", "method", "POST", "code", "200"))
		require.Equal(t, 1.0, after.value(t, "queen_http_requests_total", "route", "unmatched", "method", "GET", "code", "404"),
			"unknown paths share one label value")
		require.Equal(t, 1.0, after.value(t, "queen_http_requests_total", "route", "/api/v1/push", "method", "POST", "code", "403"),
			"a request refused before routing counts under the route it asked for")
		require.Greater(t, after.value(t, "queen_metrics_refresh_timestamp_seconds"), 0.0)
		require.Equal(t, 3.0, after.value(t, "queen_messages_pushed_total", "queue", q))
		require.Equal(t, 2.0, after.value(t, "queen_messages_popped_total", "queue", q))
		require.Equal(t, 1.0, after.value(t, "queen_messages_acked_total", "queue", q, "result", "success"))
		require.Equal(t, 1.0, after.value(t, "queen_messages_acked_total", "queue", q, "result", "failed"))
		require.Equal(t, 1.0, after.value(t, "queen_requests_total", "op", "pop"))
		require.Equal(t, 1.0, after.value(t, "queen_requests_total", "op", "ack"))
		for _, mt := range after["queen_http_requests_total"].GetMetric() {
			for _, lp := range mt.GetLabel() {
				require.NotContains(t, lp.GetValue(), "metrics-traffic", "no path leaks into a label")
			}
		}
	})

	t.Run("UnreadableStreamCyclesAreErrors", func(t *testing.T) {
		t.Parallel()
		b := setupMetrics(t)
		requireStatus(t, http.StatusBadRequest, b.post(t, "/streams/v1/cycle", `{`))
		requireStatus(t, http.StatusBadRequest, b.post(t, "/streams/v1/cycle", `{"partition_id":"x"}`))
		f := b.scrape(t)
		require.Equal(t, 2.0, f.value(t, "queen_stream_cycles_total", "result", "error"))
		require.Equal(t, 0.0, f.value(t, "queen_stream_cycles_total", "result", "committed"))
	})

	t.Run("ParkedLongPollsAreCounted", func(t *testing.T) {
		t.Parallel()
		b := setupMetrics(t)
		var wg sync.WaitGroup
		var status int
		var popErr error
		wg.Go(func() {
			resp, err := b.srv.Client().Get(b.srv.URL + "/api/v1/pop/queue/metrics-parked?wait=true&timeout=30000")
			if popErr = err; err == nil {
				status = resp.StatusCode
				resp.Body.Close()
			}
		})
		t.Cleanup(wg.Wait)
		require.Eventually(t, func() bool { return b.broker.ParkedPolls() == 1 }, 10*time.Second, 10*time.Millisecond)
		f := b.scrape(t)
		require.Equal(t, 1.0, f.value(t, "queen_pop_longpolls_parked"))
		require.Equal(t, 2.0, f.value(t, "queen_http_requests_in_flight"), "the parked pop and the scrape")

		requireStatus(t, http.StatusCreated, b.post(t, "/api/v1/push", `{"items":[{"queue":"metrics-parked","payload":1}]}`))
		wg.Wait()
		require.NoError(t, popErr)
		require.Equal(t, http.StatusOK, status)
		f = b.scrape(t)
		require.Equal(t, 0.0, f.value(t, "queen_pop_longpolls_parked"))
	})

	t.Run("NamesPassLint", func(t *testing.T) {
		t.Parallel()
		b := setupMetrics(t)
		requireStatus(t, http.StatusCreated, b.post(t, "/api/v1/push", `{"items":[{"queue":"metrics-lint","payload":1}]}`))
		require.NoError(t, b.tel.Refresh(t.Context()))

		problems, err := testutil.GatherAndLint(b.reg)
		require.NoError(t, err)
		require.Empty(t, problems)

		own := regexp.MustCompile(`^queen_[a-z0-9_]+$`)
		mfs, err := b.reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			name := mf.GetName()
			if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
				continue // the standard runtime and process collectors
			}
			require.Regexp(t, own, name)
			require.Equal(t, mf.GetType() == dto.MetricType_COUNTER, strings.HasSuffix(name, "_total"),
				"%s: counters and only counters end in _total", name)
		}
	})
}

func TestMetricsJSON(t *testing.T) {
	t.Parallel()
	b := setupMetrics(t)
	requireStatus(t, http.StatusCreated, b.post(t, "/api/v1/push", `{"items":[{"queue":"metrics-json","payload":1}]}`))

	r := b.get(t, "/metrics")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, contentTypeJSON, r.header.Get("Content-Type"))
	m := r.object(t)
	require.Equal(t, sortedKeys("uptime", "requests", "messages", "database", "memory", "cpu"), keys(m))
	sub := func(k string) map[string]any { return m[k].(map[string]any) }
	require.Equal(t, sortedKeys("total", "rate"), keys(sub("requests")))
	require.Equal(t, sortedKeys("total", "rate"), keys(sub("messages")))
	require.Equal(t, sortedKeys("poolSize", "idleConnections", "waitingRequests"), keys(sub("database")))
	require.Equal(t, sortedKeys("rss", "heapTotal", "heapUsed", "external", "arrayBuffers"), keys(sub("memory")))
	require.Equal(t, sortedKeys("user", "system"), keys(sub("cpu")))

	var got struct {
		Uptime   float64
		Requests struct{ Total, Rate float64 }
		Messages struct{ Total, Rate float64 }
		Database struct{ PoolSize, IdleConnections, WaitingRequests int64 }
		Memory   struct{ RSS, HeapTotal, HeapUsed int64 }
		CPU      struct{ User, System int64 }
	}
	require.NoError(t, json.Unmarshal(r.body, &got))
	require.Greater(t, got.Uptime, 0.0)
	require.Equal(t, 1.0, got.Requests.Total, "the push; this request is not answered yet")
	require.Greater(t, got.Requests.Rate, 0.0)
	require.Equal(t, 1.0, got.Messages.Total, "the pushed message")
	require.Greater(t, got.Messages.Rate, 0.0)
	require.Equal(t, int64(8), got.Database.PoolSize)
	require.GreaterOrEqual(t, got.Database.IdleConnections, int64(1), "the push left its connection idle")
	require.Zero(t, got.Database.WaitingRequests)
	require.Greater(t, got.Memory.HeapUsed, int64(0))
	require.GreaterOrEqual(t, got.Memory.HeapTotal, got.Memory.HeapUsed)
	require.Greater(t, got.Memory.RSS, int64(0))
	require.Greater(t, got.CPU.User+got.CPU.System, int64(0))

	r = b.get(t, "/metrics")
	require.NoError(t, json.Unmarshal(r.body, &got))
	require.Equal(t, 2.0, got.Requests.Total, "the first GET /metrics is counted")
}

func TestRateWindow(t *testing.T) {
	t.Parallel()
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var w rateWindow
	require.Equal(t, 2.0, w.observe(start.Add(5*time.Second), 10, start), "since start before a window has passed")
	require.Equal(t, 2.0, w.observe(start.Add(10*time.Second), 20, start), "a new sample is taken at 10 s")
	require.Equal(t, 3.0, w.observe(start.Add(15*time.Second), 45, start), "since start (0 at 0 s): 45/15")
	require.Equal(t, 8.0, w.observe(start.Add(20*time.Second), 100, start), "since the 10 s sample: 80/10")
	require.Equal(t, 8.0, w.observe(start.Add(20*time.Second), 100, start.Add(time.Hour)), "start only matters once")
	require.Equal(t, 0.0, w.observe(start.Add(40*time.Second), 100, start), "a quiet counter has rate 0")
}
