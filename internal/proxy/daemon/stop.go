package daemon

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/queenmq/queen/internal/appliance"
	"github.com/queenmq/queen/internal/proxy/limiter"
	"github.com/queenmq/queen/internal/proxy/meter"
)

// tiers are the proxy's components grouped by the stage that stops them; they run
// under one appliance.Lifecycle.
type tiers struct {
	// reload answers SIGHUP; it stops as soon as the stop begins.
	reload *appliance.Tier
	// serve is the public and the admin HTTP servers, which stop accepting and drain
	// in stages of their own.
	serve *appliance.Tier
	// workers are the cells' health checks, the cells and moves read from the proxy
	// database, the tenant moves this replica runs, the usage snapshots, the limiter
	// sync, the meter (its last flush), the auth listener and the key touches.
	workers *appliance.Tier
	// watchdog sends systemd keep-alives until the workers are stopped.
	watchdog *appliance.Tier
}

// run starts the components, serves until ctx is done or a component fails, and
// stops in stages.
func (p *proxy) run(ctx context.Context, o Options) error {
	lc := appliance.NewLifecycle(ctx)
	t := &tiers{reload: lc.NewEarlyTier(), serve: lc.NewTier(), workers: lc.NewTier(), watchdog: lc.NewTier()}
	instance := p.cfg.Instance
	if instance == "" {
		instance, _ = os.Hostname()
	}
	t.workers.Start(appliance.Infallible(p.gateway.RunCells))
	t.workers.Start(appliance.Infallible(p.syncPlacement))
	t.workers.Start(appliance.Infallible(p.newMover().Run))
	t.workers.Start(appliance.Infallible(p.gateway.RunSnapshots))
	t.workers.Start(appliance.Infallible((&limiter.Syncer{Limiter: p.limiter, Store: p.store, ReplicaID: p.replicaID,
		Instance: instance, Interval: p.cfg.LimiterSyncInterval, Logger: p.logger.With("component", "limiter")}).Run))
	t.workers.Start(appliance.Infallible((&meter.Runner{Meter: p.meter, Store: p.store, ReplicaID: p.replicaID,
		Interval: p.cfg.UsageFlushInterval, Logger: p.logger.With("component", "meter")}).Run))
	t.workers.Start(appliance.Infallible(p.listenAuth))
	t.workers.Start(appliance.Infallible(p.touchKeys))
	t.reload.Start(func(ctx context.Context) error { return appliance.RunSignals(ctx, o.Reload, p.hangup) })
	t.serve.Start(p.public.Serve)
	t.serve.Start(p.adminSrv.Serve)
	// Neither the database nor the brokers are probed: their outages show in
	// /health/ready and are never a reason to be restarted.
	probe := appliance.Probe{
		Accepts:  []*appliance.AcceptWatch{p.public.Listener(), p.adminSrv.Listener()},
		MaxStall: p.notifier.WatchdogInterval() / 3,
		Handlers: []http.Handler{p.public.HTTP().Handler, p.adminSrv.HTTP().Handler}, Path: "/health",
	}
	t.watchdog.Start(appliance.NewWatchdog(p.notifier, probe.Run, p.logger.With("component", "watchdog")).Run)

	addr := p.public.Listener().Addr().String()
	p.logger.Info("serving", "addr", addr, "admin", p.adminSrv.Listener().Addr().String(), "replica", p.replicaID)
	appliance.NotifyWarn(p.logger, "READY=1", p.notifier.Ready("serving on "+addr))
	if o.ReadyFunc != nil {
		o.ReadyFunc()
	}
	<-lc.Stopping().Done()
	appliance.LogStopCause(p.logger, lc.Stopping())
	appliance.RunStages(p.logger, p.stopStages(t))
	return lc.Wait()
}

// stopStages is the order of a stop, the broker's: not ready while still serving, so
// load balancers notice (QUEEN_PROXY_SHUTDOWN_DELAY); then stop accepting and drain
// both servers within QUEEN_PROXY_SHUTDOWN_TIMEOUT, cutting off what still runs (parked
// pops included); then the background components (the meter's last flush); then the
// pool.
func (p *proxy) stopStages(t *tiers) []appliance.Stage {
	grace, delay := p.cfg.ShutdownTimeout, p.cfg.ShutdownDelay
	servers := []*appliance.Server{p.public, p.adminSrv}
	return []appliance.Stage{
		{Name: "not ready", Run: func() {
			p.gateway.Drain() // /health/ready answers 503 from now on
			t.reload.Stop()
			if delay > 0 {
				appliance.NotifyWarn(p.logger, "STOPPING=1", p.notifier.Stopping(fmt.Sprintf("not ready: serving for %s before draining", delay)))
			}
		}},
		{Name: "shutdown delay", Run: func() { appliance.WaitDelay(p.logger, delay, servers...) }},
		{Name: "stop accepting", Run: func() {
			appliance.NotifyWarn(p.logger, "STOPPING=1", p.notifier.Stopping(fmt.Sprintf(
				"draining: finishing in-flight requests (deadline %s)", grace)))
			for _, s := range servers {
				s.StopAccepting(grace, "QUEEN_PROXY_SHUTDOWN_TIMEOUT")
			}
		}},
		{Name: "drain", Run: func() {
			for _, s := range servers {
				s.Drain()
			}
			t.serve.Stop()
		}},
		{Name: "stop background components", Run: func() {
			t.workers.Stop() // the meter's last flush happens here
			t.watchdog.Stop()
			p.gateway.Close()
		}},
		{Name: "close the pool", Run: func() {
			appliance.NotifyWarn(p.logger, "STATUS", p.notifier.Status("stopped: closing the proxy database pool"))
			p.store.Close()
		}},
	}
}
