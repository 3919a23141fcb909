package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/cors"
	"github.com/queenmq/queen/internal/proxy/authcache"
	"github.com/queenmq/queen/internal/proxy/brokerauth"
	"github.com/queenmq/queen/internal/proxy/limiter"
	"github.com/queenmq/queen/internal/proxy/meter"
	"github.com/queenmq/queen/internal/proxy/session"
	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
	"github.com/queenmq/queen/internal/queue"
)

// Options are what the gateway is built from.
type Options struct {
	Backends        []*url.URL
	TenancyHeader   string
	MaxBodyBytes    int64
	MaxPopTimeout   time.Duration
	BackendTimeout  time.Duration
	CheckInterval   time.Duration
	UsageRefresh    time.Duration
	QuotaFailClosed bool
	TrustedProxies  []netip.Prefix
	// CORSAllowedOrigins are the browser origins whose requests get the CORS headers
	// (and whose preflights are answered); empty turns CORS off.
	CORSAllowedOrigins []string
	TLS                bool
	Keys               *authcache.Cache
	// Store is the proxy database, for logins and sessions.
	Store *store.Store
	// Sessions signs and verifies session tokens; nil turns login off (no login
	// routes, session tokens refused).
	Sessions *session.Signer
	// Lockout counts failed logins.
	Lockout *session.Lockout
	// KeyFailures counts unknown and wrong API keys per client address.
	KeyFailures *session.Failures
	Limiter     *limiter.Limiter
	Meter       *meter.Meter
	// Minter mints the broker tokens; nil sends no Authorization (broker auth none).
	Minter *brokerauth.Minter
	// Roles maps key scopes to broker roles; AdminRole is the proxy's own role.
	Roles     map[tenant.Scope]string
	AdminRole string
	// DatabaseReady checks the proxy database for /health/ready.
	DatabaseReady func(ctx context.Context) error
	// Logger is the base logger: the gateway's lines carry component gateway, the
	// health checks' component backends.
	Logger   *slog.Logger
	Registry prometheus.Registerer
	Now      func() time.Time
}

// Server is the public HTTP handler. Serve Handler with an http.Server.
type Server struct {
	opts    Options
	logger  *slog.Logger
	cells   *cells
	moves   *moveTable
	quotas  *quotas
	meter   *meter.Meter
	metrics *metrics
	// transport carries requests to the brokers over connections whose tenancy was
	// checked (NewTransport); probes carries the health checks.
	transport, probes *http.Transport
	handler           http.Handler
	draining          atomic.Bool
	// ids mints the transaction ids of the transactions the gateway refuses itself.
	ids *queue.IDGenerator
}

// New builds the gateway; RunCells and RunSnapshots keep the brokers' health and the
// quotas' snapshot.
func New(o Options) *Server {
	s := &Server{opts: o, logger: o.Logger.With("component", "gateway"), meter: o.Meter, ids: queue.NewIDGenerator()}
	s.quotas = newQuotas(o.UsageRefresh, o.QuotaFailClosed, o.Now)
	s.metrics = newMetrics(o.Registry, func() float64 { return min(s.quotas.age().Seconds(), 1e9) })
	s.transport = NewTransport(o.TenancyHeader, s.authorizeOwn)
	s.probes = newProbeTransport()
	s.moves = newMoveTable()
	s.cells = &cells{byName: map[string]*cell{}, newPool: s.newPool}
	if len(o.Backends) > 0 {
		s.cells.set([]CellSpec{{Name: DefaultCell, Upstreams: o.Backends}})
	}
	o.Registry.MustRegister(newCellCollector(s))
	s.handler = s.requestID(s.cors(s.canonical(s.router())))
	return s
}

// cors adds the Access-Control-* headers to every answer to an allowed Origin, the
// proxy's own and the relayed ones (whose broker CORS headers relay drops), and
// answers that origin's preflights 204 without a credential, as a browser sends them.
// With no origin configured it does nothing: an OPTIONS request is routed like any
// other, to the deny-by-default 404.
func (s *Server) cors(next http.Handler) http.Handler {
	allowed := s.opts.CORSAllowedOrigins
	if len(allowed) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cors.Apply(w.Header(), allowed, r) && r.Method == http.MethodOptions &&
			r.Header.Get("Access-Control-Request-Method") != "" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Handler is the root handler of the public listener.
func (s *Server) Handler() http.Handler { return s.handler }

// newPool makes the pool of one cell's brokers.
func (s *Server) newPool(urls []*url.URL) *Pool {
	p := &Pool{client: &http.Client{Transport: s.probes}, header: s.opts.TenancyHeader, interval: s.opts.CheckInterval,
		logger: s.opts.Logger.With("component", "backends"), authorize: s.authorizeOwn, upGauge: s.metrics.backendUp}
	for _, u := range urls {
		p.backends = append(p.backends, &Backend{URL: u})
		s.metrics.backendUp.WithLabelValues(u.String()).Set(0)
	}
	return p
}

// Drain makes /health/ready answer 503 from now on.
func (s *Server) Drain() { s.draining.Store(true) }

// Close drops idle broker connections.
func (s *Server) Close() {
	s.transport.CloseIdleConnections()
	s.probes.CloseIdleConnections()
}

// Stored is a tenant's storage as quotas see it: the brokers' last snapshot plus
// what this replica admitted since.
type Stored struct {
	Messages int64 `json:"messages"`
	Bytes    int64 `json:"bytes"`
	Queues   int64 `json:"queues"`
	// ComputedAt is the snapshot's time; nil before the first.
	ComputedAt *time.Time `json:"computedAt"`
}

// Stored returns the tenant's storage as quotas see it.
func (s *Server) Stored(tenantID string) *Stored {
	m, b, q, at := s.quotas.usage(tenantID)
	v := &Stored{Messages: m, Bytes: b, Queues: q}
	if !at.IsZero() {
		v.ComputedAt = &at
	}
	return v
}

func (s *Server) router() http.Handler {
	r := chi.NewRouter()
	// What routes nowhere answers as the broker would: the 1.x clients' no_such_route
	// (or a family's own code) where the broker gives it, else not_found.
	notFound := func(w http.ResponseWriter, r *http.Request) {
		if body, ok := api.AbsentRoute(r.Method, r.URL.Path); ok {
			writeError(w, requestIDOf(r), errorf(http.StatusNotFound, body.Code, body.Error))
			return
		}
		writeError(w, requestIDOf(r), errorf(http.StatusNotFound, codeNotFound, "Not found"))
	}
	r.NotFound(notFound)
	r.MethodNotAllowed(notFound)
	// GET and HEAD alike: a load balancer may probe with either.
	live := func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, map[string]string{"status": "ok"}) }
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		r.MethodFunc(method, "/health", live)
		r.MethodFunc(method, "/health/live", live)
		r.MethodFunc(method, "/health/ready", s.handleReady)
	}
	jwks := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if s.opts.Minter == nil {
			_, _ = w.Write([]byte(`{"keys":[]}`))
			return
		}
		_, _ = w.Write(s.opts.Minter.JWKS())
	}
	r.Get("/.well-known/jwks.json", jwks)
	r.Get("/api/auth/jwks", jwks)
	s.loginRoutes(func(method, pattern string, h http.HandlerFunc) { r.Method(method, pattern, s.own(pattern, h)) })
	for i := range routeTable {
		rt := &routeTable[i]
		h := s.serveRoute(rt)
		if rt.method == "" {
			r.Handle(rt.pattern, h)
		} else {
			r.Method(rt.method, rt.pattern, h)
		}
	}
	return r
}

// own wraps one of the proxy's own routes with the request metrics.
func (s *Server) own(pattern string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h(sw, r)
		s.metrics.requests.WithLabelValues(pattern, strconv.Itoa(sw.status)).Inc()
		s.metrics.duration.WithLabelValues(pattern).Observe(time.Since(start).Seconds())
	}
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// readyTimeout bounds the proxy database check of /health/ready: a frozen database
// makes the proxy not ready, not its readiness check hang.
const readyTimeout = 2 * time.Second

// handleReady is 200 while the proxy database answers within readyTimeout, a broker
// is up and the proxy is not draining.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	status := map[string]string{"status": "ready", "database": "ok", "upstream": "ok"}
	code := http.StatusOK
	if s.draining.Load() {
		status["status"], code = "draining", http.StatusServiceUnavailable
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.opts.DatabaseReady(ctx); err != nil {
		status["database"], status["status"], code = "unavailable", "not ready", http.StatusServiceUnavailable
	}
	if !s.anyBrokerUp() {
		status["upstream"], status["status"], code = "unavailable", "not ready", http.StatusServiceUnavailable
	}
	writeJSON(w, code, status)
}

// anyBrokerUp reports whether some cell has a healthy broker.
func (s *Server) anyBrokerUp() bool {
	for _, ce := range s.cells.all() {
		if ce.pool.pick(nil) != nil {
			return true
		}
	}
	return false
}

// authorizeOwn sets the proxy's own credential (global scope, admin role).
func (s *Server) authorizeOwn(req *http.Request) error {
	if s.opts.Minter == nil {
		return nil
	}
	tok, err := s.opts.Minter.Token(brokerauth.Claims{Subject: "queen-proxy", Role: s.opts.AdminRole})
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	return nil
}

type ctxKey struct{}

// requestID gives every request an id: the client's X-Request-Id when it is 1–64
// characters of [A-Za-z0-9._-], else a new one.
func (s *Server) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			b := make([]byte, 12)
			_, _ = rand.Read(b)
			id = hex.EncodeToString(b)
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, id)))
	})
}

func requestIDOf(r *http.Request) string {
	id, _ := r.Context().Value(ctxKey{}).(string)
	return id
}

func validRequestID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
