package httpapi

import (
	"math"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/queenmq/queen/internal/analytics"
	"github.com/queenmq/queen/internal/api"
)

// rateWindowMin is the shortest span a rate of GET /metrics is computed over.
const rateWindowMin = 10 * time.Second

// Families GET /metrics reads back from the registry, so the JSON and the Prometheus
// text never disagree.
const (
	familyHTTPRequests = "queen_http_requests_total"
	familyPushed       = "queen_messages_pushed_total"
	familyPoolSize     = "queen_db_pool_size"
	familyPoolIdle     = "queen_db_pool_idle"
	familyRSS          = "process_resident_memory_bytes"
)

// routeUnmatched labels requests no route matched (404, CORS preflight), so that
// arbitrary paths never become label values.
const routeUnmatched = "unmatched"

// httpMetrics are the router's families and the state of the JSON rates.
type httpMetrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
	started  time.Time

	requestRate, messageRate rateWindow
}

// newHTTPMetrics registers the HTTP families on reg. A second server on the same
// registry is a programmer error and panics.
func newHTTPMetrics(reg *prometheus.Registry) *httpMetrics {
	m := &httpMetrics{
		registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "queen", Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests answered, by route pattern, method and status code. route=\"unmatched\" counts " +
				"unknown paths and CORS preflights; code=\"499\" means the client went away before the answer.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "queen", Subsystem: "http", Name: "request_duration_seconds",
			Help: "Time to answer an HTTP request, by route pattern and method. Long-poll pops include their " +
				"wait (up to the pop timeout, 120 s at most): exclude /api/v1/pop routes from latency objectives.",
			// Fast API calls, and long-poll pops that park up to the maximum pop
			// timeout (120 s by default).
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"route", "method"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "queen", Subsystem: "http", Name: "requests_in_flight",
			Help: "HTTP requests being served, parked long-polls and the scrape itself included.",
		}),
		started: time.Now(),
	}
	reg.MustRegister(m.requests, m.duration, m.inFlight)
	return m
}

// instrument counts and times every request under its chi route pattern. It runs
// inside accessLog, which put the route context in the request and wrapped w.
func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ww, ok := w.(middleware.WrapResponseWriter)
		if !ok {
			ww = middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		}
		m := s.metrics
		m.inFlight.Inc()
		start := time.Now()
		defer func() {
			m.inFlight.Dec()
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
				if r.Context().Err() != nil {
					status = statusClientClosed
				}
			}
			route := s.routeLabel(r)
			method := methodLabel(r.Method)
			m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
			m.duration.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(ww, r)
	})
}

// routeLabel is the route pattern a request is counted and logged under: the one the
// router matched, or, for a request refused before it got there (a body over the
// limit, a cross-origin write), the one it would have matched; routeUnmatched for a
// path no route serves and for CORS preflights.
func (s *Server) routeLabel(r *http.Request) string {
	if rctx := chi.RouteContext(r.Context()); rctx != nil && rctx.RoutePattern() != "" {
		return rctx.RoutePattern()
	}
	if r.Method != http.MethodOptions {
		if m := chi.NewRouteContext(); s.router.Match(m, r.Method, r.URL.Path) && m.RoutePattern() != "" {
			return m.RoutePattern()
		}
	}
	return routeUnmatched
}

// methodLabel bounds the method label to the standard methods.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}

// handlePrometheus is GET /metrics/prometheus: the registry in the text
// exposition format 0.0.4 (or what the scraper negotiates), public, never cached,
// always 200 unless every collector failed.
func (s *Server) handlePrometheus() http.Handler {
	h := promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{
		ErrorLog:      promLogger{s},
		ErrorHandling: promhttp.ContinueOnError,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(&textContentType{ResponseWriter: w}, r)
	})
}

// contentTypeText is the content type of the text exposition format.
const contentTypeText = "text/plain; version=0.0.4; charset=utf-8"

// textContentType drops the escaping parameter promhttp adds to the text format's
// content type: every queen name is a legacy Prometheus name, so escaping changes
// nothing, and upstream sends (and old scrapers expect) the plain 0.0.4 content type.
type textContentType struct {
	http.ResponseWriter
	fixed bool
}

func (w *textContentType) fix() {
	if w.fixed {
		return
	}
	w.fixed = true
	if h := w.Header(); strings.HasPrefix(h.Get("Content-Type"), contentTypeText) {
		h.Set("Content-Type", contentTypeText)
	}
}

func (w *textContentType) WriteHeader(code int) {
	w.fix()
	w.ResponseWriter.WriteHeader(code)
}

func (w *textContentType) Write(p []byte) (int, error) {
	w.fix()
	return w.ResponseWriter.Write(p)
}

// promLogger hands promhttp's errors to the server's logger.
type promLogger struct{ s *Server }

func (l promLogger) Println(v ...any) { l.s.logger.Warn("metrics exposition", "err", v) }

// handleMetrics is GET /metrics: uptime, request and message totals with
// their recent rates, pool figures, memory and CPU time. The counters come from the
// registry, so they match /metrics/prometheus.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) error {
	m := s.metrics
	now := time.Now()
	v := gatherSums(m.registry, familyHTTPRequests, familyPushed, familyPoolSize, familyPoolIdle, familyRSS)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	user, system, _ := analytics.CPUTime()
	return writeJSON(w, http.StatusOK, api.Metrics{
		Uptime:   roundMillis(now.Sub(m.started).Seconds()),
		Requests: api.MetricsRate{Total: v[familyHTTPRequests], Rate: m.requestRate.observe(now, v[familyHTTPRequests], m.started)},
		Messages: api.MetricsRate{Total: v[familyPushed], Rate: m.messageRate.observe(now, v[familyPushed], m.started)},
		Database: api.MetricsDatabase{
			PoolSize: int64(v[familyPoolSize]), IdleConnections: int64(v[familyPoolIdle]),
		},
		Memory: api.MetricsMemory{
			RSS: int64(v[familyRSS]), HeapTotal: int64(ms.HeapSys), HeapUsed: int64(ms.HeapAlloc),
			External: int64(ms.Sys - ms.HeapSys),
		},
		CPU: api.MetricsCPU{User: user.Microseconds(), System: system.Microseconds()},
	})
}

// gatherSums returns, for each named family of g, the sum of its counter and gauge
// samples; a family g does not have (or that failed) is absent (0).
func gatherSums(g prometheus.Gatherer, names ...string) map[string]float64 {
	out := make(map[string]float64, len(names))
	for _, n := range names {
		out[n] = 0
	}
	mfs, _ := g.Gather() // partial results are still useful; promhttp reports the errors
	for _, mf := range mfs {
		if _, ok := out[mf.GetName()]; !ok {
			continue
		}
		for _, mt := range mf.GetMetric() {
			out[mf.GetName()] += sampleValue(mt)
		}
	}
	return out
}

func sampleValue(mt *dto.Metric) float64 {
	switch {
	case mt.GetCounter() != nil:
		return mt.GetCounter().GetValue()
	case mt.GetGauge() != nil:
		return mt.GetGauge().GetValue()
	case mt.GetUntyped() != nil:
		return mt.GetUntyped().GetValue()
	}
	return 0
}

// rateWindow turns a lifetime counter into a recent per-second rate without a
// background goroutine: it keeps two samples at least rateWindowMin apart and
// reports the rate since the older one, so the rate covers 10 to 20 seconds whatever
// the polling pattern.
type rateWindow struct {
	mu            sync.Mutex
	prevAt, curAt time.Time // guarded by mu
	prevN, curN   float64   // guarded by mu
	begun         bool      // guarded by mu
}

// observe records counter value n at now and returns its rate per second; before
// the first call the counter is taken to be 0 at start.
func (w *rateWindow) observe(now time.Time, n float64, start time.Time) float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.begun {
		w.prevAt, w.curAt, w.begun = start, start, true
	}
	if now.Sub(w.curAt) >= rateWindowMin {
		w.prevAt, w.prevN = w.curAt, w.curN
		w.curAt, w.curN = now, n
	}
	span := now.Sub(w.prevAt).Seconds()
	if span <= 0 {
		return 0
	}
	return roundMillis(math.Max(n-w.prevN, 0) / span)
}

func roundMillis(f float64) float64 { return math.Round(f*1000) / 1000 }
