package progress

import (
	"context"
	"fmt"
	"sync"
)

// Signal counts the completed cycles of one loop and wakes whoever waits for them.
// The zero value is ready to use; a Signal must not be copied after first use. Only
// the loop that owns it calls Advance; anyone may call Count, Watch and WaitFor.
type Signal struct {
	mu sync.Mutex
	n  uint64
	// next is closed and cleared by Advance; nil while nobody watches.
	next chan struct{}
}

// Advance records one completed cycle and wakes every waiter.
func (s *Signal) Advance() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if s.next != nil {
		close(s.next)
		s.next = nil
	}
}

// Count returns the number of cycles completed so far.
func (s *Signal) Count() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Watch returns the number of cycles completed so far and a channel that is closed
// when the next one completes, for a caller that waits in a select of its own.
func (s *Signal) Watch() (uint64, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == nil {
		s.next = make(chan struct{})
	}
	return s.n, s.next
}

// WaitFor blocks until at least n cycles have completed, and returns nil, or until
// ctx is done first, and returns a [*WaitError] that wraps ctx's cause.
func (s *Signal) WaitFor(ctx context.Context, n uint64) error {
	for {
		got, next := s.Watch()
		if got >= n {
			return nil
		}
		select {
		case <-next:
		case <-ctx.Done():
			return &WaitError{Want: n, Got: s.Count(), Err: context.Cause(ctx)}
		}
	}
}

// WaitError is the error of a [Signal.WaitFor] whose context ended before the count
// was reached.
type WaitError struct {
	// Want is the count waited for; Got is the count when the wait gave up.
	Want, Got uint64
	// Err is the context's cause (context.DeadlineExceeded for a plain deadline).
	Err error
}

// Error says how far the loop got.
func (e *WaitError) Error() string {
	return fmt.Sprintf("progress: %d of %d cycles completed when the wait ended: %v", e.Got, e.Want, e.Err)
}

// Unwrap returns the context's cause.
func (e *WaitError) Unwrap() error { return e.Err }
