package daemon

import (
	"fmt"
	"time"

	"github.com/queenmq/queen/internal/appliance"
)

// tiers are the broker's components grouped by the stage that stops them; they run
// under one appliance.Lifecycle.
type tiers struct {
	// reload answers SIGHUP; it stops as soon as the stop begins.
	reload *appliance.Tier
	// serve is the HTTP server, which stops accepting and drains in stages of its own.
	serve *appliance.Tier
	// workers need the schema: the broker's loops (wake-ups, spool drainer), the
	// analytics recorder, maintenance, telemetry, the heartbeat and the index build.
	// They start once it is applied.
	workers *appliance.Tier
	// watchdog sends systemd keep-alives until the background components are stopped.
	watchdog *appliance.Tier
	// process lives until the very end: profiling (a drain may be profiled) and the
	// JWKS refresh.
	process *appliance.Tier
}

func newTiers(lc *appliance.Lifecycle) *tiers {
	return &tiers{
		reload:   lc.NewEarlyTier(),
		serve:    lc.NewTier(),
		workers:  lc.NewTier(),
		watchdog: lc.NewTier(),
		process:  lc.NewTier(),
	}
}

// shutdown runs the stop's stages in order, logging each, and logs "stopped" last.
// wasReady tells the stop of a serving broker from one that abandons its start
// (PostgreSQL never answered, or the stop came first).
func (d *daemon) shutdown(t *tiers, wasReady bool) {
	appliance.RunStages(d.logger, d.stopStages(t, wasReady))
}

// stopStages is the order of a stop, after Caddy's: not ready while still serving, so
// load balancers notice; then stop accepting and drain the HTTP server within the
// grace period; then the background components; then storage, spool before pool.
func (d *daemon) stopStages(t *tiers, wasReady bool) []appliance.Stage {
	grace := d.cfg.ShutdownTimeout
	if grace <= 0 {
		grace = 20 * time.Second
	}
	var stages []appliance.Stage
	if wasReady {
		stages = []appliance.Stage{
			{Name: "not ready", Run: func() { d.notReady(t) }},
			{Name: "shutdown delay", Run: func() { appliance.WaitDelay(d.logger, d.cfg.ShutdownDelay, d.http) }},
		}
	} else {
		stages = []appliance.Stage{{Name: "abandon the start", Run: func() { d.abandonStart(t) }}}
	}
	stages = append(stages,
		appliance.Stage{Name: "stop accepting", Run: func() {
			if wasReady {
				appliance.NotifyWarn(d.logger, "STOPPING=1", d.notifier.Stopping(fmt.Sprintf(
					"draining: answering %d parked long-polls, finishing in-flight requests (deadline %s)",
					d.broker.ParkedPolls(), grace)))
			}
			d.http.StopAccepting(grace, "QUEEN_SHUTDOWN_TIMEOUT")
		}},
		appliance.Stage{Name: "drain", Run: func() {
			d.broker.Close() // answers every parked long-poll at once
			d.http.Drain()
			t.serve.Stop()
		}},
		appliance.Stage{Name: "stop background components", Run: func() {
			t.workers.Stop() // the analytics recorder's last flush and the last heartbeat happen here
			t.watchdog.Stop()
		}},
		appliance.Stage{Name: "flush and close the spool", Run: func() { closeSpool(d.spool, d.logger) }})
	if d.tracer != nil {
		stages = append(stages, appliance.Stage{Name: "export the last spans", Run: func() { flushTracer(d.tracer, d.logger) }})
	}
	return append(stages,
		appliance.Stage{Name: "close the pool", Run: func() {
			appliance.NotifyWarn(d.logger, "STATUS", d.notifier.Status("stopped: closing the PostgreSQL pool"))
			d.store.Close()
		}},
		appliance.Stage{Name: "stop profiling and the key refresh", Run: func() {
			t.process.Stop()
			_ = d.ln.Close() // closed by the HTTP server already, unless it never served
		}},
	)
}

// notReady is the first stage of the stop of a serving broker: /health/ready answers
// 503 from now on, and SIGHUP no longer reloads.
func (d *daemon) notReady(t *tiers) {
	d.ready.Store(false)
	t.reload.Stop()
	if delay := d.cfg.ShutdownDelay; delay > 0 {
		appliance.NotifyWarn(d.logger, "STOPPING=1", d.notifier.Stopping(fmt.Sprintf("not ready: serving for %s before draining", delay)))
	}
}

// abandonStart is the first stage of a stop before the broker was ready: requests
// held by the start gate are answered 503 at once.
func (d *daemon) abandonStart(t *tiers) {
	d.gate.Abort()
	t.reload.Stop()
	appliance.NotifyWarn(d.logger, "STOPPING=1", d.notifier.Stopping("stopping before ready"))
}
