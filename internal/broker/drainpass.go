package broker

import "sync"

// DrainPass describes the spool drainer's latest completed pass: one wake-up (its
// timer or a spooled push) on which it looked at the spool. A wake-up inside the
// back-off after a failure is no pass.
type DrainPass struct {
	// N counts the passes completed since Run started, this one included (0: none yet).
	N uint64
	// Held is true when the push pause stopped the pass (at its start or between
	// batches): the spool was left as it was from then on.
	Held bool
	// Replayed is the number of records the pass replayed (pushed or found duplicate).
	Replayed int
	// Err is why the pass stopped before the spool was empty (the database away, or
	// refusing the replay); the drainer backs off and tries again.
	Err error
}

// drainProgress publishes each completed pass and wakes whoever waits for the next.
type drainProgress struct {
	mu   sync.Mutex
	last DrainPass
	next chan struct{} // closed, and replaced, when a pass completes
}

func newDrainProgress() *drainProgress { return &drainProgress{next: make(chan struct{})} }

// done records a completed pass.
func (p *drainProgress) done(pass DrainPass) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pass.N = p.last.N + 1
	p.last = pass
	close(p.next)
	p.next = make(chan struct{})
}

// DrainProgress returns the drainer's latest completed pass and a channel closed
// when the next one completes, so a caller (a test, a health probe) can wait for the
// drainer's progress rather than poll the spool: read, check, and if not yet, wait on
// next (with a deadline) and read again. With no spool, no pass ever completes.
func (b *Broker) DrainProgress() (last DrainPass, next <-chan struct{}) {
	p := b.spooler.progress
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last, p.next
}
