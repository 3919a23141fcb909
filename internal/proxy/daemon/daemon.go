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
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

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
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// PasswordCost is the bcrypt cost of passwords set through the admin API; 0 is
	// the proxy's 12. Tests lower it: cost 12 takes seconds under the race detector.
	PasswordCost int
}

// Run serves until ctx is cancelled, then stops in stages and returns nil. It
// returns an error when it cannot start or a component fails.
func Run(ctx context.Context, cfg *config.Config, o Options) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	logger := newLogger(cfg, o.Stdout)
	logger.Info("queen-proxy starting", "version", buildinfo.Version, "commit", buildinfo.Commit)
	logger.LogAttrs(ctx, slog.LevelInfo, "effective configuration", cfg.LogAttrs()...)
	if cfg.AdminToken == "" {
		logger.Warn("QUEEN_PROXY_ADMIN_TOKEN is unset: the admin API takes operator sessions with role admin only")
	}
	if o.Notifier == nil {
		o.Notifier, _ = sdnotify.New()
	}
	st, err := store.Open(store.Options{ConnString: cfg.PGConnString(), MaxConns: cfg.DBPoolSize, StatementTimeout: cfg.DBStatementTimeout})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := waitForDatabase(ctx, st, logger, o.Notifier); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	d, err := build(cfg, o, st, logger)
	if err != nil {
		return err
	}
	return d.run(ctx, o)
}

// waitForDatabase retries until the proxy database answers and the schema is
// applied, or ctx is done.
func waitForDatabase(ctx context.Context, st *store.Store, logger *slog.Logger, n *sdnotify.Notifier) error {
	backoff := 200 * time.Millisecond
	for {
		err := st.ApplySchema(ctx)
		if err == nil {
			return nil
		}
		if !errors.Is(err, tenant.ErrUnavailable) {
			return fmt.Errorf("apply the proxy schema: %w", err)
		}
		logger.Warn("proxy database unreachable; retrying", "err", err, "retry_in", backoff.String())
		_ = n.ExtendTimeout(30*time.Second, "waiting for the proxy database")
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// proxy is one run's parts.
type proxy struct {
	cfg       *config.Config
	logger    *slog.Logger
	store     *store.Store
	keys      *authcache.Cache
	limiter   *limiter.Limiter
	meter     *meter.Meter
	gateway   *gateway.Server
	admin     *admin.Server
	replicaID string
	public    *http.Server
	adminSrv  *http.Server
	ln, admLn net.Listener
}

func build(cfg *config.Config, o Options, st *store.Store, logger *slog.Logger) (*proxy, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	bi := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "queen_proxy_build_info", Help: "Build information."},
		[]string{"version", "revision", "goversion"})
	reg.MustRegister(bi)
	bi.WithLabelValues(buildinfo.Version, buildinfo.Commit, goVersion()).Set(1)

	p := &proxy{cfg: cfg, logger: logger, store: st, replicaID: newReplicaID()}
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
		Upstreams: cfg.Upstreams, TenancyHeader: cfg.TenancyHeader, MaxBodyBytes: cfg.MaxBodyBytes,
		MaxPopTimeout: cfg.MaxPopTimeout, UpstreamTimeout: cfg.UpstreamTimeout, CheckInterval: cfg.UpstreamCheckInterval,
		UsageRefresh: cfg.UsageRefresh, QuotaFailClosed: cfg.QuotaFailClosed, TrustedProxies: cfg.TrustedProxies,
		TLS: cfg.TLS(), Keys: p.keys, Limiter: p.limiter, Meter: p.meter, Minter: minter,
		Store: st, Sessions: sessions, Lockout: session.NewLockout(o.Now),
		KeyFailures: session.NewFailures(session.MaxKeyFailures, o.Now),
		Roles: map[tenant.Scope]string{tenant.ScopeRead: cfg.BrokerRoleReadOnly, tenant.ScopeWrite: cfg.BrokerRoleReadWrite,
			tenant.ScopeAdmin: cfg.BrokerRoleAdmin},
		AdminRole:     cfg.BrokerRoleAdmin,
		DatabaseReady: st.Ping,
		Logger:        logger.With("component", "gateway"), Registry: reg, Now: o.Now,
	})
	p.admin = admin.New(admin.Options{Token: cfg.AdminToken, Store: st, Gateway: p.gateway, Gatherer: reg,
		Logger: logger.With("component", "admin"), Now: o.Now, PasswordCost: o.PasswordCost})
	var err error
	if o.Listener, o.AdminListener, err = systemdListeners(o.Listener, o.AdminListener, logger); err != nil {
		return nil, err
	}
	if p.ln, err = listen(o.Listener, fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)); err != nil {
		return nil, err
	}
	if p.admLn, err = listen(o.AdminListener, cfg.AdminListen); err != nil {
		_ = p.ln.Close()
		return nil, err
	}
	p.public = newHTTPServer(p.gateway.Handler(), logger)
	if cfg.TLS() {
		if p.public.TLSConfig, err = tlsConfig(cfg.TLSCertFile, cfg.TLSKeyFile, logger); err != nil {
			_ = p.ln.Close()
			_ = p.admLn.Close()
			return nil, err
		}
	}
	p.adminSrv = newHTTPServer(p.admin.Handler(), logger)
	return p, nil
}

func listen(given net.Listener, addr string) (net.Listener, error) {
	if given != nil {
		return given, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

func newHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
}

func newReplicaID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// run serves and stops in stages.
func (p *proxy) run(ctx context.Context, o Options) error {
	g, failed := errgroup.WithContext(ctx)
	workers, stopWorkers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWorkers()
	bg, _ := errgroup.WithContext(workers)
	instance := p.cfg.Instance
	if instance == "" {
		instance, _ = os.Hostname()
	}
	bg.Go(func() error { p.gateway.Pool().Run(workers); return nil })
	bg.Go(func() error { p.gateway.RunSnapshots(workers); return nil })
	bg.Go(func() error {
		(&limiter.Syncer{Limiter: p.limiter, Store: p.store, ReplicaID: p.replicaID, Instance: instance,
			Interval: p.cfg.LimiterSyncInterval, Logger: p.logger.With("component", "limiter")}).Run(workers)
		return nil
	})
	bg.Go(func() error {
		(&meter.Runner{Meter: p.meter, Store: p.store, ReplicaID: p.replicaID, Interval: p.cfg.UsageFlushInterval,
			Logger: p.logger.With("component", "meter")}).Run(workers)
		return nil
	})
	bg.Go(func() error { p.listenAuth(workers); return nil })
	bg.Go(func() error { p.touchKeys(workers); return nil })
	bg.Go(func() error {
		runWatchdog(workers, o.Notifier, []http.Handler{p.public.Handler, p.adminSrv.Handler}, p.logger.With("component", "watchdog"))
		return nil
	})

	served := make(chan struct{}, 2)
	for _, s := range []struct {
		srv *http.Server
		ln  net.Listener
	}{{p.public, p.ln}, {p.adminSrv, p.admLn}} {
		g.Go(func() error {
			defer func() { served <- struct{}{} }()
			var err error
			if s.srv.TLSConfig != nil {
				err = s.srv.ServeTLS(s.ln, "", "")
			} else {
				err = s.srv.Serve(s.ln)
			}
			if !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("serve %s: %w", s.ln.Addr(), err)
			}
			return nil
		})
	}
	p.logger.Info("serving", "addr", p.ln.Addr().String(), "admin", p.admLn.Addr().String(), "replica", p.replicaID)
	_ = o.Notifier.Ready("serving on " + p.ln.Addr().String())
	if o.ReadyFunc != nil {
		o.ReadyFunc()
	}
	<-failed.Done()
	p.logger.Info("shutting down", "reason", context.Cause(failed).Error())
	p.stop(o.Notifier)
	err := g.Wait()
	stopWorkers()
	_ = bg.Wait()
	p.gateway.Close()
	p.logger.Info("stopped")
	if ctx.Err() != nil && err == nil {
		return nil
	}
	return err
}

// stop is the staged stop of the servers: not ready, then drain within the timeout,
// then close what is left (parked pops are cancelled).
func (p *proxy) stop(n *sdnotify.Notifier) {
	p.gateway.Drain()
	_ = n.Stopping("draining")
	grace := p.cfg.ShutdownTimeout
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	for _, srv := range []*http.Server{p.public, p.adminSrv} {
		if err := srv.Shutdown(sctx); err != nil {
			p.logger.Warn("requests still running at the end of the shutdown timeout; cancelling them", "err", err)
			_ = srv.Close()
		}
	}
}

// listenAuth applies auth-change notifications to the key cache.
func (p *proxy) listenAuth(ctx context.Context) {
	log := p.logger.With("component", "auth-listener")
	p.store.Listen(ctx, store.ListenHandlers{
		NotifyFunc:    p.keys.Evict,
		ConnectedFunc: p.keys.ExpireAll,
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
