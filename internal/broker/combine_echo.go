package broker

import "time"

// echoHold is how the line waits for the producers a lone statement has just
// answered. With one statement at a time, the pushes that arrive while it runs share
// the next one, and the producers it answered come back while that one runs: four
// producers pushing one message at a time give statements of two pushes, and
// PostgreSQL one statement and one commit per two messages, on one core. After a
// statement that ran alone, the next waits until the line holds as many pushes as
// were outstanding when it ended (its own and those waiting then; at most
// echoMaxLine), at most as long as that statement took (and Hold): an echo slower
// than a statement costs more than the statement it saves. The four producers then
// share each statement. Whether the answered come back within that bound is watched
// after every lone statement, waited for or not, and the line waits only while most
// of the recent ones did: producers that pause between pushes (or stop) are not
// waited for. A single producer is never held (what was outstanding was its one
// push), nor is a line big enough to start beside a statement. Off with a Preferred
// above 1 (a fixed hold instead), a MaxBatch of 1 or a Hold of 0.
type echoHold struct {
	on      bool
	want    int       // the line the next statement waits for
	need    int       // pushes to arrive for it: the answered ones
	arrived int       // pushes arrived since it was set
	done    bool      // the echo came back whole, or its bound passed
	until   time.Time // the bound
	score   float64   // moving average of echoes that came back whole (1) or not (0)
}

// echoTrust is the share of recent echoes that must have come back whole for the line
// to wait for the next; echoMaxLine is the longest line the wait gathers: one of that
// many pushes already shares a statement's start and commit widely, and with more
// producers the next statement is better started than the backend left idle.
const (
	echoTrust   = 0.5
	echoMaxLine = 8
)

// answered notes the end at now of a lone statement that took took: it answered done
// pushes, and waiting were in line.
func (e *echoHold) answered(now time.Time, took time.Duration, done, waiting, maxBatch int, hold time.Duration) {
	if !e.on {
		return
	}
	e.settle(now)
	e.want = min(done+waiting, maxBatch, echoMaxLine)
	e.need = e.want - waiting
	e.arrived = 0
	e.done = e.want < 2 || e.need <= 0
	e.until = now.Add(min(took, hold))
}

// arrive notes a push's arrival at now; true when it completed the echo while the
// line was waiting for it.
func (e *echoHold) arrive(now time.Time) bool {
	if !e.on || e.done || e.settle(now) {
		return false
	}
	e.arrived++
	if e.arrived < e.need {
		return false
	}
	e.done = true
	trusted := e.score >= echoTrust
	e.score = 0.875*e.score + 0.125
	return trusted
}

// settle ends an echo whose bound has passed at now as one that did not come back;
// true when the echo is over.
func (e *echoHold) settle(now time.Time) bool {
	if !e.done && now.After(e.until) {
		e.done = true
		e.score *= 0.875
	}
	return e.done
}

// wait is how long a line of n pushes still waits for the echo while others
// statements run; 0 when it may go. A line big enough to start beside a statement
// (big) does not wait either.
func (e *echoHold) wait(now time.Time, others, n int, big bool) time.Duration {
	if !e.on || others > 0 || big || n >= e.want || e.score < echoTrust || e.settle(now) {
		return 0
	}
	return e.until.Sub(now)
}
