package session

import (
	"sync"
	"time"
)

// Failed-login limits: more than MaxUserFailures failures for one username, or
// MaxIPFailures from one client address, within Window refuse further attempts
// (429) until the oldest failure leaves the window.
const (
	MaxUserFailures = 10
	MaxIPFailures   = 50
	Window          = 10 * time.Minute
	// MaxKeyFailures is the API-key limit: that many unknown or wrong keys from one
	// client address within Window refuse its API keys (429) until the oldest
	// failure leaves the window.
	MaxKeyFailures = 50
	// maxTracked bounds the memory of a tracker: past it, the entries whose
	// failures have all left the window are dropped, then arbitrary ones.
	maxTracked = 100_000
)

// Failures counts failures per key (a username, a client address) within Window on
// this replica, and refuses a key once it has max of them. It is safe for
// concurrent use.
type Failures struct {
	max int
	now func() time.Time

	mu sync.Mutex
	m  map[string][]time.Time
}

// NewFailures returns an empty tracker that refuses a key at max failures.
func NewFailures(max int, now func() time.Time) *Failures {
	return &Failures{max: max, now: now, m: map[string][]time.Time{}}
}

// Blocked reports whether key is refused now, and for how long: until the oldest of
// its last max failures leaves the window.
func (f *Failures) Blocked(key string) (bool, time.Duration) {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	times := f.prune(key, now)
	if len(times) < f.max {
		return false, 0
	}
	wait := times[len(times)-f.max].Add(Window).Sub(now)
	if wait <= 0 {
		return false, 0
	}
	return true, wait
}

// Fail records a failure of key.
func (f *Failures) Fail(key string) {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.m) >= maxTracked {
		f.shrink(now)
	}
	f.m[key] = append(f.prune(key, now), now)
}

// Forget drops the failures of key.
func (f *Failures) Forget(key string) {
	f.mu.Lock()
	delete(f.m, key)
	f.mu.Unlock()
}

// prune drops the failures of key that left the window and returns the rest,
// keeping at most the last max.
func (f *Failures) prune(key string, now time.Time) []time.Time {
	times := f.m[key]
	i := 0
	for i < len(times) && now.Sub(times[i]) >= Window {
		i++
	}
	times = times[i:]
	if len(times) > f.max {
		times = times[len(times)-f.max:]
	}
	if len(times) == 0 {
		delete(f.m, key)
		return nil
	}
	f.m[key] = times
	return times
}

// shrink makes room in a full tracker: stale entries go first, then arbitrary ones
// until a tenth is free.
func (f *Failures) shrink(now time.Time) {
	for k := range f.m {
		f.prune(k, now)
	}
	for k := range f.m {
		if len(f.m) < maxTracked*9/10 {
			return
		}
		delete(f.m, k)
	}
}

// Lockout counts failed logins per username and per client IP on this replica.
// It is safe for concurrent use.
type Lockout struct {
	users, ips *Failures
}

// NewLockout returns an empty tracker.
func NewLockout(now func() time.Time) *Lockout {
	return &Lockout{users: NewFailures(MaxUserFailures, now), ips: NewFailures(MaxIPFailures, now)}
}

// Blocked reports whether a login for user from ip is refused now, and for how long.
func (l *Lockout) Blocked(user, ip string) (bool, time.Duration) {
	_, byUser := l.users.Blocked(user)
	_, byIP := l.ips.Blocked(ip)
	wait := max(byUser, byIP)
	return wait > 0, wait
}

// Fail records a failed login for user from ip.
func (l *Lockout) Fail(user, ip string) {
	l.users.Fail(user)
	l.ips.Fail(ip)
}

// Succeed forgets the user's failures (not the address's).
func (l *Lockout) Succeed(user string) { l.users.Forget(user) }
