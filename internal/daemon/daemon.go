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

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/buildinfo"
	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/encryption"
	"github.com/queenmq/queen/internal/httpapi"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/sdnotify"
	"github.com/queenmq/queen/internal/store"
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

// Run serves the broker until ctx is cancelled, then drains and returns nil; it
// returns an error when it cannot start.
func Run(ctx context.Context, cfg *config.Config, opts Options) error {
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	logger, level := newLogger(cfg, opts.Stdout)
	applyGC(cfg)
	logger.Info("queen starting", "version", buildinfo.Version, "commit", buildinfo.Commit, "build_date", buildinfo.Date)
	logger.LogAttrs(ctx, slog.LevelInfo, "effective configuration", cfg.LogAttrs()...)
	for _, w := range cfg.Warnings() {
		logger.Warn("configuration warning", "warning", w)
	}
	logUnknownVariables(logger, cfg.UnknownVariables())
	defer startReload(ctx, cfg, level, logger, opts.Reload)()
	if os.Geteuid() == 0 {
		logger.Warn("running as root; the packaged service runs as the unprivileged user queen")
	}
	verifier, err := newVerifier(cfg, logger)
	if err != nil {
		return err
	}
	notifier := newNotifier(opts, logger)

	ln, source := opts.Listener, "given by the caller"
	if ln == nil {
		var err error
		if ln, source, err = listen(cfg); err != nil {
			return err
		}
	}
	defer ln.Close()
	stopPprof, err := startPprof(ctx, cfg.PprofAddr, logger.With("component", "pprof"))
	if err != nil {
		return err
	}
	defer stopPprof()
	logAuthMode(ctx, logger, cfg, verifier, ln.Addr())
	if verifier.UsesJWKS() {
		jwksCtx, stopJWKS := context.WithCancel(context.WithoutCancel(ctx))
		jwksDone := make(chan struct{})
		go func() { defer close(jwksDone); _ = verifier.Run(jwksCtx) }()
		defer func() { stopJWKS(); <-jwksDone }()
	}

	st, err := store.Open(store.Options{
		ConnString:       cfg.PGConnString(),
		MaxConns:         cfg.DBPoolSize,
		StatementTimeout: cfg.DBStatementTimeout,
		LockTimeout:      cfg.DBLockTimeout,
		IdleInTxTimeout:  cfg.DBIdleTimeout,
		ConnectTimeout:   cfg.DBConnectionTimeout,
		KeepAlive: net.KeepAliveConfig{
			Idle: cfg.DBKeepalivesIdle, Interval: cfg.DBKeepalivesInterval, Count: cfg.DBKeepalivesCount,
		},
		TCPUserTimeout: cfg.DBTCPUserTimeout,
	})
	if err != nil {
		return err
	}
	defer st.Close()

	var sealer *encryption.Sealer
	if len(cfg.EncryptionKey) > 0 {
		if sealer, err = encryption.New(cfg.EncryptionKey); err != nil {
			return fmt.Errorf("%w: QUEEN_ENCRYPTION_KEY: %w", ErrUnsupportedConfig, err)
		}
	}
	logger.Info("encryption at rest", "key_configured", sealer != nil)
	sp, err := openSpool(cfg, logger)
	if err != nil {
		return err
	}
	defer closeSpool(sp, logger)

	b := broker.New(broker.Config{
		DefaultTimeout:          cfg.DefaultTimeout,
		MaxPopTimeout:           cfg.MaxPopTimeout,
		DefaultBatchSize:        cfg.DefaultBatchSize,
		MaxPopBatch:             cfg.MaxPopBatch,
		MaxPushItems:            cfg.MaxPushItems,
		MaxAckItems:             cfg.MaxAckItems,
		DefaultSubscriptionMode: cfg.DefaultSubscriptionMode,
		PopWaitInitialInterval:  cfg.PopWaitInitialInterval,
		PopWaitBackoffThreshold: cfg.PopWaitBackoffThreshold,
		PopWaitBackoffMultiple:  cfg.PopWaitBackoffMultiplier,
		PopWaitMaxInterval:      cfg.PopWaitMaxInterval,
		Sealer:                  sealer,
		Instance:                cfg.Instance,
		Spool:                   sp,
		SpoolFlushInterval:      cfg.FileBufferFlushInterval,
		SpoolMaxBatch:           cfg.FileBufferMaxBatch,
	}, st, logger.With("component", "broker"))
	b.SetDatabaseReady(false) // pushes are spooled until the schema is applied
	registry, tel, err := newTelemetry(st, b, logger)
	if err != nil {
		return err
	}

	var ready atomic.Bool
	gate, spoolGate := newStartGate(), newPushGate()
	api := httpapi.New(httpapi.Options{
		MaxBodyBytes:       cfg.MaxBodyBytes,
		CORSAllowedOrigins: cfg.CORSAllowedOrigins,
		Version:            buildinfo.Version,
		Registry:           registry,
		Verifier:           verifier,
		AuthSkipPaths:      cfg.JWTSkipPaths,
		ReadyFunc: func(context.Context) error {
			if !ready.Load() {
				return errors.New("starting or draining")
			}
			return nil
		},
	}, b, logger) // httpapi adds component=httpapi itself
	srv := &http.Server{
		Handler:           spoolGate.wrap(gate, gate.Wrap(api.Handler()), api.Handler()),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.With("component", "httpapi").Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	accepting := newAcceptWatch(ln)
	go func() { serveErr <- srv.Serve(accepting) }()
	logger.Info("listening", "addr", ln.Addr().String(), "source", source)
	watchdogCtx, stopWatchdog := context.WithCancel(context.WithoutCancel(ctx))
	watchdogDone := make(chan struct{})
	go func() {
		defer close(watchdogDone)
		runWatchdog(watchdogCtx, notifier,
			livenessProbe(accepting, srv.Handler, b, notifier.WatchdogInterval()/3), logger.With("component", "watchdog"))
	}()
	defer func() { stopWatchdog(); <-watchdogDone }()
	notifyWarn(logger, "STATUS", notifier.Status("connecting to PostgreSQL at "+pgTarget(cfg)))

	if err := waitForDatabase(ctx, st, logger, func(attempt int, retryIn time.Duration, err error) {
		reportWaiting(notifier, cfg, attempt, retryIn, err, logger)
		spoolGate.open() // PostgreSQL is down: pushes go to the spool meanwhile
	}); err != nil {
		gate.Abort()
		notifyWarn(logger, "STOPPING=1", notifier.Stopping("stopping before ready"))
		shutdownHTTP(srv, b, cfg.ShutdownTimeout, logger)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	waitTelemetry := runTelemetry(runCtx, tel, cfg)
	defer waitTelemetry() // deferred first, so it runs after stopRun below
	b.SetDatabaseReady(true)
	waitJobs, err := runMaintenance(runCtx, cfg, st, registry, logger)
	if err != nil {
		stopRun()
		return err
	}
	defer waitJobs()
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		b.Run(runCtx)
	}()
	defer func() {
		stopRun()
		<-runDone
	}()
	ready.Store(true)
	defer st.StartIndexBuild(runCtx, logger.With("component", "schema"))()
	gate.Open()
	logger.Info("ready", "addr", ln.Addr().String())
	notifyWarn(logger, "READY=1", notifier.Ready(fmt.Sprintf("ready: serving on %s, PostgreSQL at %s", ln.Addr(), pgTarget(cfg))))
	if opts.ReadyFunc != nil {
		opts.ReadyFunc(ln.Addr().String())
	}

	select {
	case <-ctx.Done():
		logger.Info("shutting down", "reason", context.Cause(ctx).Error())
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("daemon: serve: %w", err)
		}
	}
	ready.Store(false)
	delayShutdown(notifier, cfg.ShutdownDelay, serveErr, logger)
	notifyWarn(logger, "STOPPING=1", notifier.Stopping(fmt.Sprintf(
		"draining: answering %d parked long-polls, finishing in-flight requests (deadline %s)", b.ParkedPolls(), cfg.ShutdownTimeout)))
	shutdownHTTP(srv, b, cfg.ShutdownTimeout, logger)
	notifyWarn(logger, "STATUS", notifier.Status("stopped: closing the PostgreSQL pool"))
	logger.Info("stopped")
	return nil
}

// waitForDatabase applies the schema, retrying with a capped backoff while
// PostgreSQL is unreachable, logging each attempt and reporting it to onWait.
func waitForDatabase(ctx context.Context, st *store.Store, logger *slog.Logger, onWait func(attempt int, retryIn time.Duration, err error)) error {
	delay := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := st.ApplySchema(ctx)
		if err == nil {
			logger.Info("schema applied", "attempt", attempt)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !errors.Is(err, queue.ErrUnavailable) {
			return fmt.Errorf("daemon: apply schema: %w", err)
		}
		logger.Warn("waiting for PostgreSQL", "attempt", attempt, "retry_in", delay.String(), "err", err)
		onWait(attempt, delay, err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
	}
}

// delayShutdown is the first stage of a stop: /health/ready already answers 503, and
// the broker keeps serving for delay so load balancers and Kubernetes endpoints stop
// sending before the listener closes. It returns early if the server stopped.
func delayShutdown(n *sdnotify.Notifier, delay time.Duration, serveErr <-chan error, logger *slog.Logger) {
	if delay <= 0 {
		return
	}
	logger.Info("not ready; serving until the load balancers notice, then draining", "delay", delay.String())
	notifyWarn(logger, "STOPPING=1", n.Stopping(fmt.Sprintf("not ready: serving for %s before draining", delay)))
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case err := <-serveErr:
		logger.Warn("HTTP server stopped during the shutdown delay", "err", err)
	}
}

// shutdownHTTP stops accepting, answers parked long-polls and waits for in-flight
// requests within the grace period.
func shutdownHTTP(srv *http.Server, b *broker.Broker, grace time.Duration, logger *slog.Logger) {
	if grace <= 0 {
		grace = 20 * time.Second
	}
	b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		logger.Warn("shutdown grace period exceeded; closing remaining connections", "err", err)
		_ = srv.Close()
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
