package checker

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// restarter restarts the brokers in turn, one at a time, evenly spread over the
// producers' time. A rolling restart leaves one more slot free at the end, so that
// the broker restarted last serves pushes again before the producers are done. A
// broker is restarted once it has answered a push and a pop since it last started,
// so that the restart interrupts traffic even where producers and consumers start
// late (a loaded machine); it waits for that at most one slot, then restarts the
// broker anyway.
func (r *run) restarter(ctx context.Context) {
	defer close(r.restartsDone)
	slots := r.cfg.Restarts + 1
	if r.cfg.Rolling {
		slots++
	}
	slot := r.cfg.Duration / time.Duration(slots)
	for i := range r.cfg.Restarts {
		at := time.Duration(int64(r.cfg.Duration) * int64(i+1) / int64(slots))
		if !r.waitUntil(ctx, at) {
			return
		}
		b, graceful := r.restartPlan(i)
		if !r.waitForTraffic(ctx, b, r.lastReady(b), r.since()+slot) {
			return
		}
		how, restart := "abruptly", r.cl.Restart
		if graceful {
			how, restart = "gracefully", r.cl.RestartGraceful
		}
		stopping := r.since()
		r.cfg.Logf("checker: restarting broker %d %s at %s", b, how, stopping.Round(time.Millisecond))
		if err := restart(ctx, b); err != nil {
			r.fail(fmt.Errorf("checker: restart broker %d %s: %w", b, how, err))
			return
		}
		ready := r.since()
		r.restartLog = append(r.restartLog, Restart{Broker: b, Graceful: graceful, Stopping: stopping, Ready: ready})
		r.restarts.Add(1)
		r.cfg.Logf("checker: broker %d back at %s", b, ready.Round(time.Millisecond))
	}
}

// lastReady is when broker b was last back from a restart (0: never restarted).
// Only the restarter writes the restart log, and only it calls this.
func (r *run) lastReady(b int) time.Duration {
	for _, rs := range slices.Backward(r.restartLog) {
		if rs.Broker == b {
			return rs.Ready
		}
	}
	return 0
}

// waitForTraffic waits until broker b has answered a push and a pop with messages
// sent at from or later, the producers are done, or the run reaches the offset
// deadline; false when ctx ended first.
func (r *run) waitForTraffic(ctx context.Context, b int, from, deadline time.Duration) bool {
	served := func() bool {
		if r.popSent[b].Load() < int64(from) {
			return false
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		return slices.ContainsFunc(r.pushSpans[b], func(s span) bool { return s.sent >= from })
	}
	for !served() && !r.producersDone.Load() && r.since() < deadline {
		if !r.pause(ctx, 10*time.Millisecond) {
			return false
		}
	}
	return ctx.Err() == nil
}

// restartPlan names the broker of the i-th restart (from 0) and whether it is graceful.
func (r *run) restartPlan(i int) (broker int, graceful bool) {
	n := len(r.clients)
	if !r.cfg.Rolling {
		return (i + 1) % n, false
	}
	return i % n, r.cfg.KillEvery == 0 || (i+1)%r.cfg.KillEvery != 0
}

// restartTraffic returns the restart log with the traffic each restarted broker
// served around each restart (see [Restart]).
func (r *run) restartTraffic(all []*consumer) []Restart {
	out := slices.Clone(r.restartLog)
	for k := range out {
		rs := &out[k]
		from, to := time.Duration(0), never
		for j := k - 1; j >= 0; j-- {
			if out[j].Broker == rs.Broker {
				from = out[j].Ready
				break
			}
		}
		for j := k + 1; j < len(out); j++ {
			if out[j].Broker == rs.Broker {
				to = out[j].Stopping
				break
			}
		}
		count := func(s span, before, after *int) {
			if s.sent >= from && s.received <= rs.Stopping {
				*before++
			}
			if s.sent >= rs.Ready && s.received <= to {
				*after++
			}
		}
		for _, s := range r.pushSpans[rs.Broker] {
			count(s, &rs.PushesBefore, &rs.PushesAfter)
		}
		for _, c := range all {
			for e, ep := range c.episodes {
				// The episodes of one pop answer are adjacent and share its lease.
				samePop := e > 0 && c.episodes[e-1].LeaseID == ep.LeaseID && c.episodes[e-1].Sent == ep.Sent
				if ep.Broker == rs.Broker && !samePop {
					count(span{ep.Sent, ep.Received}, &rs.PopsBefore, &rs.PopsAfter)
				}
			}
		}
	}
	return out
}
