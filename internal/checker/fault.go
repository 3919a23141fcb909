package checker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// Fault is a database fault a run injects while its traffic goes on: a PostgreSQL
// primary killed, a planned switchover, a database cut off for a while...
type Fault struct {
	// At is the fault's offset from the start of the run.
	At time.Duration
	// Name names the fault in the report.
	Name string
	// Do injects the fault. It may return at once (a kill) or once the fault is over
	// (a switchover command, a cut-off restored): the report keeps both ends. An error
	// ends the run with that error.
	Do func(ctx context.Context) error
	// Timeouts says that the fault may make PostgreSQL cancel statements on its own
	// (statement_timeout, lock_timeout: a 504 answer with code "timeout", nothing
	// stored), as a primary resumed after a freeze does: the statements in flight when
	// it stopped reach their statement_timeout the moment it resumes (the clock ran
	// while it was stopped), and until its failover manager demotes it, requests that
	// reach it may wait on the locks of its frozen transactions. Such answers in its
	// window are counted (Report.FaultTimeouts), not violations.
	Timeouts bool
}

// FaultEvent is one fault as it happened: Do was called at Start and returned at End
// (offsets from the start of the run).
type FaultEvent struct {
	Name       string
	Start, End time.Duration
	Timeouts   bool // Fault.Timeouts
}

// FaultReport is one fault and what the clients saw around it. Its window runs from
// its Start to the next fault's Start (or the end of the run); a request belongs to
// the window its answer (or transport error) arrived in.
type FaultReport struct {
	FaultEvent
	// Disrupted is true when a push of the window was answered buffered or 503, or
	// got no answer; FirstDisruption is when the first such answer arrived.
	Disrupted       bool
	FirstDisruption time.Duration
	// Recovered is true when a push sent after the first disruption was answered
	// within the window with every item queued (or duplicate: stored already);
	// Recovery is the time from Start to that answer. Without disruption Recovered is
	// true and Recovery 0: the fault was seamless to the producers.
	Recovered bool
	Recovery  time.Duration
	// Push requests of the window: answered with every item queued (or duplicate),
	// with at least one item buffered, answered 503, failed otherwise (no answer,
	// another status).
	PushesQueued, PushesBuffered, Pushes503, PushErrors int
	// Pops, acks and transactions of the window answered 503, and failed otherwise.
	Other503, OtherErrors int
}

// String renders f for a test log, e.g. "fault kill-primary at 10.000..10.012:
// pushes queued again after 7.250 s (first disruption 10.020); pushes: 80 queued,
// 41 buffered, 0 503, 3 errors; others: 12 503, 5 errors".
func (f FaultReport) String() string {
	var rec string
	switch {
	case !f.Disrupted:
		rec = "no disruption"
	case f.Recovered:
		rec = fmt.Sprintf("pushes queued again after %.3f s (first disruption %s)", f.Recovery.Seconds(), secs(f.FirstDisruption))
	default:
		rec = fmt.Sprintf("pushes NOT queued again within the window (first disruption %s)", secs(f.FirstDisruption))
	}
	return fmt.Sprintf("fault %s at %s..%s: %s; pushes: %d queued, %d buffered, %d 503, %d errors; others: %d 503, %d errors",
		f.Name, secs(f.Start), secs(f.End), rec, f.PushesQueued, f.PushesBuffered, f.Pushes503, f.PushErrors, f.Other503, f.OtherErrors)
}

// faulter injects cfg.Faults one at a time at their offsets.
func (r *run) faulter(ctx context.Context) {
	defer func() {
		r.faultsEnd.Store(int64(r.since()))
		close(r.faultsDone)
	}()
	faults := slices.Clone(r.cfg.Faults)
	slices.SortStableFunc(faults, func(a, b Fault) int { return cmp.Compare(a.At, b.At) })
	for _, f := range faults {
		if !r.waitUntil(ctx, f.At) {
			return
		}
		start := r.since()
		r.cfg.Logf("checker: fault %s at %s", f.Name, start.Round(time.Millisecond))
		err := f.Do(ctx)
		end := r.since()
		r.faultLog = append(r.faultLog, FaultEvent{Name: f.Name, Start: start, End: end, Timeouts: f.Timeouts})
		if err != nil {
			if ctx.Err() == nil {
				r.fail(fmt.Errorf("checker: fault %s: %w", f.Name, err))
			}
			return
		}
		r.cfg.Logf("checker: fault %s done at %s", f.Name, end.Round(time.Millisecond))
	}
}

// faultWindow is the window of h's fault k: its Start to the next fault's (the end of
// the run for the last one).
func faultWindow(h *History, k int) (from, to time.Duration) {
	from, to = h.Faults[k].Start, never
	if k+1 < len(h.Faults) {
		to = h.Faults[k+1].Start
	}
	return from, to
}

// inTimeoutsWindow reports whether q's answer arrived in the window of a fault of h
// that may make statements time out.
func inTimeoutsWindow(h *History, q *Request) bool {
	for k, ev := range h.Faults {
		if from, to := faultWindow(h, k); ev.Timeouts && q.Received >= from && q.Received < to {
			return true
		}
	}
	return false
}

// faultReports judges the requests of h around each of its faults.
func faultReports(h *History) []FaultReport {
	out := make([]FaultReport, len(h.Faults))
	for k, ev := range h.Faults {
		f := &out[k]
		f.FaultEvent = ev
		from, to := faultWindow(h, k)
		in := func(q *Request) bool { return q.Received >= from && q.Received < to }
		for i := range h.Requests {
			q := &h.Requests[i]
			if !in(q) {
				continue
			}
			if q.Route != RoutePush {
				switch {
				case q.Status == 503:
					f.Other503++
				case !q.ok():
					f.OtherErrors++
				}
				continue
			}
			switch {
			case q.Status == 503:
				f.Pushes503++
			case !q.ok():
				f.PushErrors++
			case q.Buffered > 0:
				f.PushesBuffered++
			default:
				f.PushesQueued++
			}
			if q.disrupted() && (!f.Disrupted || q.Received < f.FirstDisruption) {
				f.Disrupted, f.FirstDisruption = true, q.Received
			}
		}
		if !f.Disrupted {
			f.Recovered = true
			continue
		}
		first := never
		for i := range h.Requests {
			q := &h.Requests[i]
			if q.Route == RoutePush && in(q) && q.Sent >= f.FirstDisruption && q.allQueued() {
				first = min(first, q.Received)
			}
		}
		if first != never {
			f.Recovered, f.Recovery = true, first-ev.Start
		}
	}
	return out
}
