// Package testclock moves time for tests instead of waiting for it: a settable clock
// for code that takes its time from a func() time.Time (a NowFunc), and AdvanceBubble
// for code run in a testing/synctest bubble. It is test-only: never import it from
// non-test code.
package testclock

import (
	"sync"
	"time"
)

// Clock is a time that only the test moves. It is safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock that reads t until it is moved.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time; pass c.Now where code wants a func() time.Time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// AdvanceBubble moves the fake clock of the testing/synctest bubble it runs in
// forward by d, at once: inside a bubble time.Sleep waits for nothing real.
func AdvanceBubble(d time.Duration) {
	time.Sleep(d) //nolint:forbidigo // inside a synctest bubble: fake time, no real wait
}
