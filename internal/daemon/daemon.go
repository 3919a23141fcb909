package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/queenmq/queen/internal/appliance"
	"github.com/queenmq/queen/internal/auth"
	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/buildinfo"
	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/encryption"
	"github.com/queenmq/queen/internal/httpapi"
	"github.com/queenmq/queen/internal/maintenance"
	"github.com/queenmq/queen/internal/sdnotify"
	"github.com/queenmq/queen/internal/spool"
	"github.com/queenmq/queen/internal/store"
	"github.com/queenmq/queen/internal/telemetry"
	"github.com/queenmq/queen/internal/tracing"
)

// Options are the parts of a daemon run that are not configuration: where logs go and,
// for tests, a listener to serve on instead of binding HOST:PORT.
type Options struct {
	Stdout   io.Writer
	Listener net.Listener
	// ReadyFunc, when set, is called with the served address once the broker is ready.
	ReadyFunc func(addr string)
	// Notifier reports readiness, status and watchdog keep-alives to systemd; nil
	// means this process's own (NOTIFY_SOCKET), a no-op outside a Type=notify unit.
	Notifier *sdnotify.Notifier
	// Reload delivers SIGHUP: each one re-reads the env files named by
	// QUEEN_ENV_FILES (reload.go). nil means no reloads.
	Reload <-chan os.Signal
}

// ErrUnsupportedConfig marks a configuration this build cannot honour (exit 78).
var ErrUnsupportedConfig = errors.New("unsupported configuration")

// Run serves the broker until ctx is cancelled, then stops in stages (lifecycle.go)
// and returns nil. It returns an error when it cannot start, or when one of its
// components fails, which stops the others in the same stages.
func Run(ctx context.Context, cfg *config.Config, opts Options) error {
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	logger, level := newLogger(cfg, opts.Stdout)
	applyGC(cfg)
	logBootRecord(ctx, logger, level, cfg)
	reload := newReloader(cfg, level, logger, opts.Reload)
	if os.Geteuid() == 0 {
		logger.Warn("running as root; the packaged service runs as the unprivileged user queen")
	}
	d := &daemon{cfg: cfg, logger: logger, reload: reload, gate: newStartGate(), pushGate: newPushGate()}
	var undo appliance.Undo
	if err := d.open(ctx, opts, &undo); err != nil {
		undo.Unwind()
		return err
	}
	return d.run(ctx, opts.ReadyFunc)
}

// daemon is one run of the broker: the parts open wires together, which run starts
// and then stops in stages.
type daemon struct {
	cfg      *config.Config
	logger   *slog.Logger
	notifier *sdnotify.Notifier
	verifier *auth.Verifier
	reload   *reloader    // nil: no reloads
	pprof    *pprofServer // nil: QUEEN_PPROF_ADDR is empty
	ln       net.Listener
	source   string // where ln comes from, for the log
	store    *store.Store
	spool    *spool.Spool
	broker   *broker.Broker
	tel      *telemetry.Telemetry
	maint    *maintenance.Runner
	http     *appliance.Server
	api      *httpapi.Server
	tracer   *tracing.Tracer // nil: tracing off
	gate     *startGate
	pushGate *pushGate
	// ready is what /health/ready reports before it pings the database: true from the
	// moment the start gate opens until the stop begins.
	ready atomic.Bool
}

// open builds every part of the broker and starts none: everything that can refuse
// to start does so here, before anything runs. Each part that holds a resource pushes
// its close on undo where it is opened; on an error the caller unwinds it.
func (d *daemon) open(ctx context.Context, opts Options, undo *appliance.Undo) (err error) {
	cfg, logger := d.cfg, d.logger
	if d.verifier, err = newVerifier(cfg, logger); err != nil {
		return err
	}
	d.notifier = appliance.NewNotifier(opts.Notifier, logger)
	d.ln, d.source = opts.Listener, "given by the caller"
	if d.ln == nil {
		if d.ln, d.source, err = listen(cfg); err != nil {
			return err
		}
		warnIgnoredAddress(cfg, d.source, logger)
	}
	undo.Push(func() { _ = d.ln.Close() })
	if d.pprof, err = newPprofServer(ctx, cfg.PprofAddr, logger.With("component", "pprof")); err != nil {
		return err
	}
	if d.pprof != nil {
		undo.Push(d.pprof.closeListener)
	}
	logAuthMode(ctx, logger, cfg, d.verifier, d.ln.Addr())
	logPostgres(ctx, logger, cfg)

	d.store, err = store.Open(store.Options{
		ConnString:       cfg.PGConnString(),
		MaxConns:         cfg.DBPoolSize,
		StatementTimeout: cfg.DBStatementTimeout,
		LockTimeout:      cfg.DBLockTimeout,
		IdleInTxTimeout:  cfg.DBIdleTimeout,
		ConnectTimeout:   cfg.ConnectTimeout(),
		KeepAlive: net.KeepAliveConfig{
			Idle: cfg.DBKeepalivesIdle, Interval: cfg.DBKeepalivesInterval, Count: cfg.DBKeepalivesCount,
		},
		TCPUserTimeout: cfg.DBTCPUserTimeout,
		TLSRootCAs:     cfg.PGRootCAs(),
		TLSClientCert:  cfg.PGClientCert(),
		AnswerDeadline: cfg.InflightDeadline(),
		CommitStall:    cfg.DBCommitStall,
		Logger:         logger.With("component", "store"),
		PopAsyncCommit: !cfg.PopSynchronousCommit,
	})
	if err != nil {
		return err
	}
	undo.Push(d.store.Close)
	var sealer *encryption.Sealer
	if len(cfg.EncryptionKey) > 0 {
		if sealer, err = encryption.New(cfg.EncryptionKey); err != nil {
			return fmt.Errorf("%w: QUEEN_ENCRYPTION_KEY: %w", ErrUnsupportedConfig, err)
		}
	}
	logger.Info("encryption at rest", "key_configured", sealer != nil)
	if d.spool, err = openSpool(ctx, cfg, logger); err != nil {
		return err
	}
	undo.Push(func() { closeSpool(d.spool, logger) })

	bcfg := broker.SettingsConfig(cfg)
	bcfg.Sealer, bcfg.Spool = sealer, d.spool
	d.broker = broker.New(bcfg, d.store, logger.With("component", "broker"))
	d.broker.SetDatabaseReady(false) // pushes are spooled until the schema is applied
	registry, tel, err := newTelemetry(d.store, d.broker, logger)
	if err != nil {
		return err
	}
	d.tel = tel
	if d.maint, err = newMaintenance(cfg, d.broker.Config().Instance, d.store, registry, logger); err != nil {
		return err
	}

	dash, err := newDashboard(cfg, d.verifier != nil)
	if err != nil {
		return err
	}
	if d.tracer, err = newTracer(ctx, cfg, logger); err != nil {
		return err
	}
	undo.Push(func() { flushTracer(d.tracer, logger) })
	api := httpapi.New(httpapi.Options{
		Dashboard:          dash,
		MaxBodyBytes:       cfg.MaxBodyBytes,
		CORSAllowedOrigins: cfg.CORSAllowedOrigins,
		Version:            buildinfo.Version,
		Registry:           registry,
		Verifier:           d.verifier,
		AuthSkipPaths:      cfg.JWTSkipPaths,
		TenancyHeader:      cfg.TenancyHeader,
		Tracer:             d.tracer,
		ReadyFunc: func(context.Context) error {
			if !d.ready.Load() {
				return errors.New("starting or draining")
			}
			return nil
		},
	}, d.broker, logger) // httpapi adds component=httpapi itself
	d.api = api
	h := d.pushGate.wrap(d.gate, d.gate.Wrap(api.Handler()), api.Handler())
	d.http = appliance.NewServer(d.ln,
		appliance.NewHTTPServer(h, cfg.ReadTimeout, logger.With("component", "httpapi"), slog.LevelWarn), logger)
	return nil
}

// run starts the components, serves until ctx is done or a component fails, and
// stops in stages (lifecycle.go).
func (d *daemon) run(ctx context.Context, readyFunc func(addr string)) error {
	lc := appliance.NewLifecycle(ctx)
	t := newTiers(lc)
	if d.pprof != nil {
		t.process.Start(d.pprof.Run)
	}
	if d.verifier.UsesJWKS() {
		t.process.Start(d.verifier.Run)
	}
	if d.reload != nil {
		t.reload.Start(d.reload.Run)
	}
	t.serve.Start(d.http.Serve)
	d.logger.Info("listening", "addr", d.ln.Addr().String(), "source", d.source)
	probe := appliance.Probe{
		Accepts: []*appliance.AcceptWatch{d.http.Listener()}, MaxStall: d.notifier.WatchdogInterval() / 3,
		Handlers: []http.Handler{d.http.HTTP().Handler}, Path: "/health/live",
		// the broker's registry of parked long-polls can be locked
		Checks: []func(context.Context) error{func(context.Context) error { _ = d.broker.ParkedPolls(); return nil }},
	}
	t.watchdog.Start(appliance.NewWatchdog(d.notifier, probe.Run, d.logger.With("component", "watchdog")).Run)
	appliance.NotifyWarn(d.logger, "STATUS", d.notifier.Status("connecting to PostgreSQL at "+pgTarget(d.cfg)))

	if err := d.becomeReady(lc.Stopping(), t.workers); err != nil {
		if errors.Is(err, context.Canceled) {
			appliance.LogStopCause(d.logger, lc.Stopping())
		}
		d.shutdown(t, false)
		if werr := lc.Wait(); errors.Is(err, context.Canceled) {
			return werr // nil after a signal, else the component that failed
		}
		return err
	}
	if readyFunc != nil {
		readyFunc(d.ln.Addr().String())
	}
	<-lc.Stopping().Done()
	appliance.LogStopCause(d.logger, lc.Stopping())
	d.shutdown(t, true)
	return lc.Wait()
}

// becomeReady waits for PostgreSQL and the schema, starts the components that need
// them, opens the start gate and tells systemd. An error means the start is abandoned.
func (d *daemon) becomeReady(ctx context.Context, workers *appliance.Tier) error {
	err := waitForDatabase(ctx, d.store, d.cfg.ApplySchema, d.logger, func(attempt int, retryIn time.Duration, err error) {
		reportWaiting(d.notifier, d.cfg, attempt, retryIn, err, d.logger)
		d.pushGate.open() // PostgreSQL is down: pushes go to the spool meanwhile
	})
	if err != nil {
		return err
	}
	workers.Start(appliance.Infallible(d.tel.Run)) // the backlog gauges
	workers.Start(appliance.Infallible(func(ctx context.Context) { d.tel.RunRateLog(ctx, d.cfg.StatsLogInterval) }))
	d.broker.SetDatabaseReady(true)
	workers.Start(appliance.Infallible(d.maint.Run))
	workers.Start(appliance.Infallible(d.broker.Run)) // wake-ups, the spool drainer
	workers.Start(d.broker.Analytics().Run)           // samples and flushes the activity counters
	// Fires due timers; every replica runs it, one fires per cycle (leader-gated).
	workers.Start(appliance.Infallible(d.broker.RunTimers))
	if d.cfg.TenancyHeader != "" {
		// A tenant being moved to another cell is fenced before anything is served,
		// and fences set through other brokers apply here within a second.
		if err := d.api.LoadFences(ctx); err != nil {
			return err
		}
		workers.Start(appliance.Infallible(d.api.RunFences))
	}
	d.ready.Store(true)
	workers.Start(d.newHeartbeat(ctx).Run) // this replica's row in queen.replicas
	workers.Start(d.buildIndexes)
	d.gate.Open()
	d.logger.Info("ready", "addr", d.ln.Addr().String())
	appliance.NotifyWarn(d.logger, "READY=1", d.notifier.Ready(fmt.Sprintf("ready: serving on %s, PostgreSQL at %s", d.ln.Addr(), pgTarget(d.cfg))))
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
