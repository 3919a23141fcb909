package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/queenmq/queen/internal/appliance"
	"github.com/queenmq/queen/internal/buildinfo"
	"github.com/queenmq/queen/internal/proxy/admin"
	"github.com/queenmq/queen/internal/proxy/authcache"
	"github.com/queenmq/queen/internal/proxy/brokerauth"
	"github.com/queenmq/queen/internal/proxy/config"
	"github.com/queenmq/queen/internal/proxy/gateway"
	"github.com/queenmq/queen/internal/proxy/limiter"
	"github.com/queenmq/queen/internal/proxy/meter"
	"github.com/queenmq/queen/internal/proxy/session"
	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
	"github.com/queenmq/queen/internal/sdnotify"
)

// Options are the parts of a run that are not configuration.
type Options struct {
	Stdout io.Writer
	// Listener and AdminListener replace binding HOST:PORT and QUEEN_PROXY_ADMIN_LISTEN.
	Listener, AdminListener net.Listener
	// ReadyFunc is called once the proxy serves.
	ReadyFunc func()
	// Notifier reports to systemd; nil is this process's own.
	Notifier *sdnotify.Notifier
	// Reload delivers SIGHUP, which the proxy logs (hangup.go); nil means none.
	Reload <-chan os.Signal
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// PasswordCost is the bcrypt cost of passwords set through the admin API; 0 is
	// the proxy's 12. Tests lower it: cost 12 takes seconds under the race detector.
	PasswordCost int
}

// Run serves until ctx is cancelled, then stops in stages (stop.go) and returns nil.
// It returns an error when it cannot start or a component fails.
func Run(ctx context.Context, cfg *config.Config, o Options) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	logger, _ := appliance.NewLogger(o.Stdout, cfg.LogFormat, cfg.LogLevel)
	logger.Info("queen-proxy starting", "version", buildinfo.Version, "commit", buildinfo.Commit)
	logger.LogAttrs(ctx, slog.LevelInfo, "effective configuration", cfg.LogAttrs()...)
	if cfg.AdminToken == "" {
		logger.Warn("QUEEN_PROXY_ADMIN_TOKEN is unset: the admin API takes operator sessions with role admin only")
	}
	o.Notifier = appliance.NewNotifier(o.Notifier, logger)
	var undo appliance.Undo
	p, err := open(ctx, cfg, o, logger, &undo)
	if err != nil || p == nil {
		undo.Unwind()
		return err // nil: stopped while waiting for the database
	}
	return p.run(ctx, o)
}

// open opens the store, waits for the database and builds every part; it starts
// none. Each part that holds a resource pushes its close on undo where it is opened.
// A nil proxy without an error means ctx ended while waiting for the database.
func open(ctx context.Context, cfg *config.Config, o Options, logger *slog.Logger, undo *appliance.Undo) (*proxy, error) {
	st, err := store.Open(store.Options{ConnString: cfg.PGConnString(), MaxConns: cfg.DBPoolSize,
		StatementTimeout: cfg.DBStatementTimeout, Logger: logger.With("component", "store")})
	if err != nil {
		return nil, err
	}
	undo.Push(st.Close)
	if err := waitForDatabase(ctx, st, logger, o.Notifier); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, nil
	}
	return build(cfg, o, st, logger, undo)
}

// waitForDatabase retries until the proxy database answers and the schema is
// applied, or ctx is done (nil).
func waitForDatabase(ctx context.Context, st *store.Store, logger *slog.Logger, n *sdnotify.Notifier) error {
	_, err := appliance.WaitForDatabase(ctx, appliance.Backoff{First: 200 * time.Millisecond, Max: 5 * time.Second},
		st.ApplySchema,
		func(err error) bool { return errors.Is(err, tenant.ErrUnavailable) },
		func(_ int, retryIn time.Duration, err error) {
			logger.Warn("proxy database unreachable; retrying", "err", err, "retry_in", retryIn.String())
			appliance.NotifyWarn(logger, "EXTEND_TIMEOUT_USEC", n.ExtendTimeout(30*time.Second, "waiting for the proxy database"))
		})
	switch {
	case ctx.Err() != nil:
		return nil
	case err != nil:
		return fmt.Errorf("apply the proxy schema: %w", err)
	}
	return nil
}

// proxy is one run's parts.
type proxy struct {
	cfg       *config.Config
	logger    *slog.Logger
	notifier  *sdnotify.Notifier
	store     *store.Store
	keys      *authcache.Cache
	limiter   *limiter.Limiter
	meter     *meter.Meter
	gateway   *gateway.Server
	admin     *admin.Server
	replicaID string
	// placementKick asks syncPlacement to read cells and moves now.
	placementKick chan struct{}
	// public serves the gateway, adminSrv the admin API.
	public, adminSrv *appliance.Server
}

func build(cfg *config.Config, o Options, st *store.Store, logger *slog.Logger, undo *appliance.Undo) (*proxy, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	bi := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "queen_proxy_build_info", Help: "Build information."},
		[]string{"version", "revision", "goversion"})
	reg.MustRegister(bi)
	bi.WithLabelValues(buildinfo.Version, buildinfo.Commit, goVersion()).Set(1)
	reg.MustRegister(newPoolCollector(st))

	p := &proxy{cfg: cfg, logger: logger, notifier: o.Notifier, store: st, replicaID: newReplicaID(),
		placementKick: make(chan struct{}, 1)}
	p.keys = authcache.New(st, cfg.AuthCacheTTL, o.Now)
	p.limiter = limiter.New(o.Now)
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "queen_proxy_replicas_live",
		Help: "Live proxy replicas (this one included), as the last limiter sync counted them."},
		func() float64 { return float64(p.limiter.Replicas()) }))
	p.meter = meter.New(o.Now, reg)
	var minter *brokerauth.Minter
	if cfg.BrokerAuth == "jwt" {
		var err error
		if minter, err = brokerauth.New(cfg.BrokerJWTKey, cfg.BrokerJWTIssuer, cfg.BrokerJWTAudience, cfg.BrokerJWTTTL, o.Now); err != nil {
			return nil, err
		}
	}
	var sessions *session.Signer
	if cfg.Login {
		sessions = session.NewSigner([]byte(cfg.SessionKey), cfg.SessionTTL, o.Now)
	}
	p.gateway = gateway.New(gateway.Options{
		Backends: cfg.Backends, TenancyHeader: cfg.TenancyHeader, MaxBodyBytes: cfg.MaxBodyBytes,
		MaxPopTimeout: cfg.MaxPopTimeout, BackendTimeout: cfg.BackendTimeout, CheckInterval: cfg.BackendCheckInterval,
		UsageRefresh: cfg.UsageRefresh, QuotaFailClosed: cfg.QuotaFailClosed, TrustedProxies: cfg.TrustedProxies,
		CORSAllowedOrigins: cfg.CORSAllowedOrigins,
		TLS:                cfg.TLS(), Keys: p.keys, Limiter: p.limiter, Meter: p.meter, Minter: minter,
		Store: st, Sessions: sessions, Lockout: session.NewLockout(o.Now),
		KeyFailures: session.NewFailures(session.MaxKeyFailures, o.Now),
		Roles: map[tenant.Scope]string{tenant.ScopeRead: cfg.BrokerRoleReadOnly, tenant.ScopeWrite: cfg.BrokerRoleReadWrite,
			tenant.ScopeAdmin: cfg.BrokerRoleAdmin, tenant.ScopePush: cfg.BrokerRoleWriteOnly},
		AdminRole:     cfg.BrokerRoleAdmin,
		DatabaseReady: st.Ping,
		Logger:        logger, Registry: reg, Now: o.Now,
	})
	p.admin = admin.New(admin.Options{Token: cfg.AdminToken, Store: st, Gateway: p.gateway, Gatherer: reg,
		Logger: logger.With("component", "admin"), Now: o.Now, PasswordCost: o.PasswordCost,
		CellHealth: func(cell string) []admin.CellUpstream {
			var out []admin.CellUpstream
			for _, b := range p.gateway.CellBrokers(cell) {
				out = append(out, admin.CellUpstream{URL: b.URL.String(), State: b.State()})
			}
			return out
		}})
	var err error
	if o.Listener, o.AdminListener, err = systemdListeners(o.Listener, o.AdminListener, logger); err != nil {
		return nil, err
	}
	ln, err := listen(o.Listener, fmt.Sprintf("%s:%d", cfg.Host, cfg.Port), undo)
	if err != nil {
		return nil, err
	}
	admLn, err := listen(o.AdminListener, cfg.AdminListen, undo)
	if err != nil {
		return nil, err
	}
	public := newHTTPServer(p.gateway.Handler(), logger)
	if cfg.TLS() {
		if public.TLSConfig, err = tlsConfig(cfg.TLSCertFile, cfg.TLSKeyFile, logger); err != nil {
			return nil, err
		}
	}
	p.public = appliance.NewServer(ln, public, logger)
	p.adminSrv = appliance.NewServer(admLn, newHTTPServer(p.admin.Handler(), logger), logger)
	return p, nil
}

// listen returns given, or else a listener bound to addr; either way its close is
// pushed on undo.
func listen(given net.Listener, addr string, undo *appliance.Undo) (net.Listener, error) {
	ln := given
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return nil, fmt.Errorf("listen on %s: %w", addr, err)
		}
	}
	undo.Push(func() { _ = ln.Close() })
	return ln, nil
}

// newHTTPServer is the appliance's server with the proxy's read timeout; net/http's
// own messages (bad TLS handshakes) are logged at Debug.
func newHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	return appliance.NewHTTPServer(h, 60*time.Second, logger, slog.LevelDebug)
}

func goVersion() string { return runtime.Version() }

func newReplicaID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// listenAuth applies auth-change notifications to the key cache.
func (p *proxy) listenAuth(ctx context.Context) {
	log := p.logger.With("component", "auth-listener")
	p.store.Listen(ctx, store.ListenHandlers{
		NotifyFunc: func(payload string) {
			p.keys.Evict(payload)
			if placementChanged(payload) {
				p.kick()
			}
		},
		ConnectedFunc: func() {
			p.keys.ExpireAll()
			p.kick()
		},
		LostFunc: func(err error) {
			p.keys.ExpireAll()
			log.Warn("auth listener lost its connection; cached keys expire now", "err", err)
		},
	})
}

// touchKeys records lastUsedAt of the keys used, at most every 10 s.
func (p *proxy) touchKeys(ctx context.Context) {
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			ids := p.keys.TakeUsed()
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_ = p.store.KeyTouch(cctx, ids, now)
			cancel()
		}
	}
}
