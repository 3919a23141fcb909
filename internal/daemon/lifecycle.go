package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// lifecycle runs the daemon's long-running components under one errgroup: the first
// component to fail cancels stopping, which starts the staged stop, and its error is
// what Run returns. Each component belongs to a tier whose context only the tier's
// own shutdown stage cancels, so that the stages stop the tiers one after the other,
// in the order the stop needs, rather than all at once.
type lifecycle struct {
	group *errgroup.Group
	// stopping is done once the caller's context is (a signal) or a component failed;
	// its cause says which.
	stopping context.Context
	// base carries the caller's values without its cancellation: the tiers' parent.
	base context.Context
}

func newLifecycle(ctx context.Context) *lifecycle {
	g, stopping := errgroup.WithContext(ctx)
	return &lifecycle{group: g, stopping: stopping, base: context.WithoutCancel(ctx)}
}

// newTier returns an empty tier whose context is a child of parent.
func (lc *lifecycle) newTier(parent context.Context) *tier {
	ctx, cancel := context.WithCancel(parent)
	return &tier{lc: lc, ctx: ctx, cancel: cancel}
}

// wait waits for every component and returns the first error one of them returned.
// Call it once every tier is stopped.
func (lc *lifecycle) wait() error { return lc.group.Wait() }

// tier is a set of components that one shutdown stage stops together.
type tier struct {
	lc     *lifecycle
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// start runs run in the lifecycle's group with the tier's context. run has the shape
// of every component: it blocks until its context is done, cleans up and returns nil;
// an error instead stops the whole daemon.
func (t *tier) start(run func(context.Context) error) {
	t.wg.Add(1)
	t.lc.group.Go(func() error {
		defer t.wg.Done()
		return run(t.ctx)
	})
}

// stop cancels the tier's context and waits until all its components returned.
func (t *tier) stop() {
	t.cancel()
	t.wg.Wait()
}

// infallible gives a Run that cannot fail the shape of a component.
func infallible(run func(context.Context)) func(context.Context) error {
	return func(ctx context.Context) error {
		run(ctx)
		return nil
	}
}

// tiers are the daemon's components grouped by the stage that stops them.
type tiers struct {
	// reload answers SIGHUP; it stops as soon as the stop begins.
	reload *tier
	// serve is the HTTP server, which stops accepting and drains in stages of its own.
	serve *tier
	// workers need the schema: the broker's loops (wake-ups, spool drainer), the
	// analytics recorder, maintenance, telemetry, the heartbeat and the index build.
	// They start once it is applied.
	workers *tier
	// watchdog sends systemd keep-alives until the background components are stopped.
	watchdog *tier
	// process lives until the very end: profiling (a drain may be profiled) and the
	// JWKS refresh.
	process *tier
}

func newTiers(lc *lifecycle) *tiers {
	return &tiers{
		reload:   lc.newTier(lc.stopping),
		serve:    lc.newTier(lc.base),
		workers:  lc.newTier(lc.base),
		watchdog: lc.newTier(lc.base),
		process:  lc.newTier(lc.base),
	}
}

// stage is one named step of the stop.
type stage struct {
	name string
	run  func()
}

// shutdown runs the stop's stages in order, logging each, and logs "stopped" last.
// wasReady tells the stop of a serving broker from one that abandons its start
// (PostgreSQL never answered, or the stop came first).
func (d *daemon) shutdown(t *tiers, wasReady bool) {
	for _, s := range d.stopStages(t, wasReady) {
		d.logger.Info("shutdown stage", "stage", s.name)
		s.run()
	}
	d.logger.Info("stopped")
}

// stopStages is the order of a stop, after Caddy's: not ready while still serving, so
// load balancers notice; then stop accepting and drain the HTTP server within the
// grace period; then the background components; then storage, spool before pool.
func (d *daemon) stopStages(t *tiers, wasReady bool) []stage {
	grace := d.cfg.ShutdownTimeout
	if grace <= 0 {
		grace = 20 * time.Second
	}
	var stages []stage
	if wasReady {
		stages = []stage{
			{"not ready", func() { d.notReady(t) }},
			{"shutdown delay", d.delayShutdown},
		}
	} else {
		stages = []stage{{"abandon the start", func() { d.abandonStart(t) }}}
	}
	return append(stages,
		stage{"stop accepting", func() {
			if wasReady {
				notifyWarn(d.logger, "STOPPING=1", d.notifier.Stopping(fmt.Sprintf(
					"draining: answering %d parked long-polls, finishing in-flight requests (deadline %s)",
					d.broker.ParkedPolls(), grace)))
			}
			d.http.stopAccepting(grace)
		}},
		stage{"drain", func() {
			d.broker.Close() // answers every parked long-poll at once
			d.http.drain()
			t.serve.stop()
		}},
		stage{"stop background components", func() {
			t.workers.stop() // the analytics recorder's last flush and the last heartbeat happen here
			t.watchdog.stop()
		}},
		stage{"flush and close the spool", func() { closeSpool(d.spool, d.logger) }},
		stage{"close the pool", func() {
			notifyWarn(d.logger, "STATUS", d.notifier.Status("stopped: closing the PostgreSQL pool"))
			d.store.Close()
		}},
		stage{"stop profiling and the key refresh", func() {
			t.process.stop()
			_ = d.ln.Close() // closed by the HTTP server already, unless it never served
		}},
	)
}

// notReady is the first stage of the stop of a serving broker: /health/ready answers
// 503 from now on, and SIGHUP no longer reloads.
func (d *daemon) notReady(t *tiers) {
	d.ready.Store(false)
	t.reload.stop()
	if delay := d.cfg.ShutdownDelay; delay > 0 {
		notifyWarn(d.logger, "STOPPING=1", d.notifier.Stopping(fmt.Sprintf("not ready: serving for %s before draining", delay)))
	}
}

// delayShutdown keeps serving for QUEEN_SHUTDOWN_DELAY while /health/ready answers 503,
// so load balancers and Kubernetes endpoints stop sending before the listener closes.
// It returns early if the server stopped.
func (d *daemon) delayShutdown() {
	delay := d.cfg.ShutdownDelay
	if delay <= 0 {
		return
	}
	d.logger.Info("not ready; serving until the load balancers notice, then draining", "delay", delay.String())
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-d.http.served:
		d.logger.Warn("HTTP server stopped during the shutdown delay", "err", d.http.serveErr)
	}
}

// abandonStart is the first stage of a stop before the broker was ready: requests
// held by the start gate are answered 503 at once.
func (d *daemon) abandonStart(t *tiers) {
	d.gate.Abort()
	t.reload.stop()
	notifyWarn(d.logger, "STOPPING=1", d.notifier.Stopping("stopping before ready"))
}

// logStopCause logs why the stop begins: the caller's cancellation (a signal) or the
// component that failed.
func logStopCause(logger *slog.Logger, stopping context.Context) {
	logger.Info("shutting down", "reason", context.Cause(stopping).Error())
}
