package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// stampOffset is added to every send stamp so that each has 19 digits (until the run
// is 31 years old) and every timed payload the same length.
const stampOffset = int64(1e18)

// sendClock stamps payloads with the bench's monotonic clock: nanoseconds since base
// plus stampOffset. Producers and consumers run in the bench process, so a stamp
// compared with the clock on delivery is the push→delivery latency, whatever the
// wall clock does meanwhile.
type sendClock struct{ base time.Time }

func (c sendClock) stampAt(t time.Time) int64 { return stampOffset + int64(t.Sub(c.base)) }
func (c sendClock) stamp() int64              { return c.stampAt(time.Now()) }

// timedPayload returns the payload appender of the mixed cases: a JSON object of about
// n bytes, {"sent":<stamp>,"body":"xx…"}, stamped as it is appended (when the request
// is built, just before it is sent).
func (c sendClock) timedPayload(n int) func([]byte) []byte {
	const head = `{"sent":1000000000000000000,"body":""}`
	pad := strings.Repeat("x", max(n-len(head), 0))
	return func(dst []byte) []byte {
		dst = append(dst, `{"sent":`...)
		dst = strconv.AppendInt(dst, c.stamp(), 10)
		dst = append(dst, `,"body":"`...)
		dst = append(dst, pad...)
		return append(dst, `"}`...)
	}
}

// latencySample is one delivery: when it happened and how long after its push,
// both in stamp units (nanoseconds).
type latencySample struct{ at, lat int64 }

// latencyLog collects push→delivery latencies, one slice per consumer (no locking),
// each stamped with its delivery time so that only deliveries inside the measured
// part of the window count.
type latencyLog struct {
	clock     sendClock
	perWorker [][]latencySample
}

func newLatencyLog(clock sendClock, workers int) *latencyLog {
	return &latencyLog{clock: clock, perWorker: make([][]latencySample, workers)}
}

// record notes the delivery, now, of a message stamped sent; worker w is the only
// caller with that index. A message without a stamp (sent ≤ 0) is not recorded.
func (l *latencyLog) record(w int, sent int64) {
	if sent <= 0 {
		return
	}
	now := l.clock.stamp()
	l.perWorker[w] = append(l.perWorker[w], latencySample{at: now, lat: now - sent})
}

// within returns the latencies of the deliveries inside [start, start+elapsed].
// Call it once the workers have stopped.
func (l *latencyLog) within(start time.Time, elapsed time.Duration) []time.Duration {
	from := l.clock.stampAt(start)
	to := from + int64(elapsed)
	var out []time.Duration
	for _, samples := range l.perWorker {
		for _, s := range samples {
			if s.at >= from && s.at <= to {
				out = append(out, time.Duration(s.lat))
			}
		}
	}
	return out
}

// percentile returns the p-th percentile (0 < p ≤ 1, nearest rank) of samples.
func percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := int(float64(len(s))*p+0.999999) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

// pacerMaxLag is how far behind its schedule a paced worker may fall (the broker
// stalled) before it drops the missed slots instead of sending them in a burst.
const pacerMaxLag = 250 * time.Millisecond

// pacer spaces the requests of each of its workers interval apart, worker w's first
// request w/workers of an interval after its first call, so that together they offer
// workers/interval requests per second.
type pacer struct {
	interval time.Duration
	next     []time.Time // zero until the worker's first request
}

// newPacer paces workers to rate requests per second in total.
func newPacer(rate float64, workers int) *pacer {
	return &pacer{
		interval: time.Duration(float64(workers) / rate * float64(time.Second)),
		next:     make([]time.Time, workers),
	}
}

// delay books worker w's next slot and returns how long, from now, it has to wait
// for it. Only worker w calls it with w.
func (p *pacer) delay(w int, now time.Time) time.Duration {
	if p.next[w].IsZero() {
		p.next[w] = now.Add(p.interval * time.Duration(w) / time.Duration(len(p.next)))
	}
	d := p.next[w].Sub(now)
	if d < -pacerMaxLag {
		p.next[w], d = now, 0
	}
	p.next[w] = p.next[w].Add(p.interval)
	return max(d, 0)
}

// wait blocks until worker w's next slot, or returns ctx's error.
func (p *pacer) wait(ctx context.Context, w int) error {
	d := p.delay(w, time.Now())
	if d == 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// longPollLatency parks a long-poll on an empty queue, waits gap so it is surely
// parked, pushes one message and measures from just before the push is sent until
// the pop's answer arrives; samples times.
func (h *httpLoad) longPollLatency(ctx context.Context, queueName string, samples int, gap time.Duration, payload string) ([]time.Duration, error) {
	body := appendPushBody(nil, queueName, 1, func(int) int { return 0 }, constPayload(payload))
	popPath := "/api/v1/pop/queue/" + url.PathEscape(queueName) + "?batch=1&wait=true&timeout=10000&autoAck=true"
	type answer struct {
		at     time.Time
		status int
		err    error
	}
	var pushBuf bytes.Buffer
	out := make([]time.Duration, 0, samples)
	for i := -1; i < samples; i++ { // i == -1 warms up (creates the queue)
		ch := make(chan answer, 1)
		go func() {
			var buf bytes.Buffer
			status, err := h.do(ctx, http.MethodGet, popPath, nil, &buf)
			ch <- answer{at: time.Now(), status: status, err: err}
		}()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(gap):
		}
		start := time.Now()
		status, err := h.do(ctx, http.MethodPost, "/api/v1/push", body, &pushBuf)
		if err != nil {
			return nil, err
		}
		if status != http.StatusCreated {
			return nil, fmt.Errorf("latency push: HTTP %d: %.300s", status, pushBuf.String())
		}
		a := <-ch
		if a.err != nil {
			return nil, a.err
		}
		if a.status != http.StatusOK {
			return nil, fmt.Errorf("latency pop: HTTP %d (expected the pushed message)", a.status)
		}
		if i >= 0 {
			out = append(out, a.at.Sub(start))
		}
	}
	return out, nil
}
