package limiter

import (
	"math"
	"sync"
	"time"

	"github.com/queenmq/queen/internal/proxy/tenant"
)

// Kinds of limit a refusal names (the "limit" of a 429).
const (
	LimitRequests    = "requests"
	LimitMessages    = "messages"
	LimitConcurrency = "concurrency"
)

// Refusal says why a request was not admitted and when to retry.
type Refusal struct {
	// Limit is LimitRequests, LimitMessages or LimitConcurrency.
	Limit string
	// RetryAfter is how long until the bucket holds the cost again (at least 1 ms).
	RetryAfter time.Duration
}

// Limiter holds the buckets of every tenant seen by this replica. It is safe for
// concurrent use.
type Limiter struct {
	now func() time.Time

	mu       sync.Mutex
	replicas int
	tenants  map[string]*state
}

// state is one tenant's buckets, concurrency and demand on this replica.
type state struct {
	limits             tenant.Limits
	reqShare, msgShare float64
	req, msg           bucket
	inflight           int
	// askedReq and askedMsg are the tokens asked for since the last sync, admitted
	// or not; demandReq and demandMsg their smoothed rates.
	askedReq, askedMsg   float64
	demandReq, demandMsg float64
	lastAsked            time.Time
}

// New returns a limiter reading the time from now (time.Now in production).
func New(now func() time.Time) *Limiter {
	return &Limiter{now: now, replicas: 1, tenants: map[string]*state{}}
}

// Admit asks for one request of the tenant carrying messages messages (0 for
// anything but pushes). On success release must be called once the request is over
// (the concurrency slot); on refusal nothing was taken.
func (l *Limiter) Admit(tenantID string, limits tenant.Limits, messages int) (release func(), refused *Refusal) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.tenants[tenantID]
	if st == nil {
		share := 1 / float64(l.replicas)
		st = &state{reqShare: share, msgShare: share}
		l.tenants[tenantID] = st
	}
	st.limits = limits
	st.askedReq++
	st.askedMsg += float64(messages)
	st.lastAsked = now

	if limits.MaxConcurrent > 0 && st.inflight >= shareOf(limits.MaxConcurrent, st.reqShare) {
		return nil, &Refusal{Limit: LimitConcurrency, RetryAfter: time.Second}
	}
	reqRate, reqBurst := scaled(limits.RequestsPerSecond, limits.RequestsBurst, st.reqShare)
	msgRate, msgBurst := scaled(limits.MessagesPerSecond, limits.MessagesBurst, st.msgShare)
	if wait := st.req.wait(now, reqRate, reqBurst, 1); wait > 0 {
		return nil, &Refusal{Limit: LimitRequests, RetryAfter: wait}
	}
	if messages > 0 {
		if wait := st.msg.wait(now, msgRate, msgBurst, float64(messages)); wait > 0 {
			return nil, &Refusal{Limit: LimitMessages, RetryAfter: wait}
		}
	}
	st.req.take(reqRate, 1)
	if messages > 0 {
		st.msg.take(msgRate, float64(messages))
	}
	st.inflight++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			st.inflight--
			l.mu.Unlock()
		})
	}, nil
}

// InFlight is the tenant's number of admitted requests not yet released.
func (l *Limiter) InFlight(tenantID string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.tenants[tenantID]; st != nil {
		return st.inflight
	}
	return 0
}

// Replicas is the number of live proxy replicas (this one included) the last sync
// heard of; 1 before the first.
func (l *Limiter) Replicas() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.replicas
}

// Shares returns the tenant's current request and message shares.
func (l *Limiter) Shares(tenantID string) (requests, messages float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.tenants[tenantID]; st != nil {
		return st.reqShare, st.msgShare
	}
	return 1 / float64(l.replicas), 1 / float64(l.replicas)
}

// shareOf is this replica's part of an integer cap: at least 1.
func shareOf(limit int, share float64) int {
	return max(1, int(math.Ceil(float64(limit)*share)))
}

// scaled is a limit's rate and burst times the share; rate 0 is unlimited. A burst
// of 0 with a rate is one second's worth.
func scaled(rate, burst, share float64) (float64, float64) {
	if rate <= 0 {
		return 0, 0
	}
	if burst <= 0 {
		burst = rate
	}
	return rate * share, max(1, burst*share)
}

// bucket is a token bucket whose rate and capacity the caller passes on each use, as
// shares change them.
type bucket struct {
	tokens float64
	at     time.Time
	primed bool
}

// wait refills the bucket up to burst and returns how long until it holds
// min(cost, burst), 0 when it does now. rate 0 is unlimited.
func (b *bucket) wait(now time.Time, rate, burst, cost float64) time.Duration {
	if rate <= 0 {
		return 0
	}
	if !b.primed {
		b.tokens, b.at, b.primed = burst, now, true
	}
	if elapsed := now.Sub(b.at).Seconds(); elapsed > 0 {
		b.tokens = min(burst, b.tokens+elapsed*rate)
		b.at = now
	}
	b.tokens = min(b.tokens, burst)
	need := min(cost, burst)
	if b.tokens >= need {
		return 0
	}
	return max(time.Millisecond, time.Duration((need-b.tokens)/rate*float64(time.Second)))
}

// take subtracts cost, possibly going negative. rate 0 is unlimited.
func (b *bucket) take(rate, cost float64) {
	if rate > 0 {
		b.tokens -= cost
	}
}
