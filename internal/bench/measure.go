package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// errDrained is returned by an operation when there is nothing left to consume.
var errDrained = errors.New("drained")

// window says how long a measurement runs: results of the warm-up are discarded, then
// completed messages are counted for the duration (or until the work is drained).
type window struct {
	warmup   time.Duration
	duration time.Duration
	// atStart, when set, is called as the measured part begins (not when the work
	// drains during the warm-up); run calls the wait it returns before returning.
	atStart func() (wait func())
}

// measurement is what one load run counted inside its window.
type measurement struct {
	msgs int64
	// start is when the measured part began (the end of the warm-up, or the start of
	// the run when the work drained during the warm-up); elapsed is its length.
	start   time.Time
	elapsed time.Duration
	// cpu is the CPU time the broker, PostgreSQL and the bench used inside the window
	// (zero when not sampled).
	cpu cpuSample
	// empty counts operations that found nothing to do (contended or drained).
	empty int64
	// inWarmup: the work ended during the warm-up, so the window is the whole run and
	// window.atStart was never called.
	inWarmup bool
}

func (m measurement) rate() float64 {
	if m.elapsed <= 0 {
		return 0
	}
	return float64(m.msgs) / m.elapsed.Seconds()
}

// op runs one unit of work for worker w and returns the number of messages it
// completed (0: nothing available right now). errDrained stops that worker cleanly.
type op func(ctx context.Context, w int) (int, error)

// run starts workers running fn in a loop and counts completed messages inside win.
// limit > 0 ends the measurement early once that many messages completed in total
// (finite, pre-filled work); then the window is cut at that moment. cpu, when not
// nil, reads the CPU time of the broker, PostgreSQL and the bench at the window's edges.
func (win window) run(parent context.Context, workers int, limit int64, cpu func() cpuSample, fn op) (measurement, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var (
		done, empty atomic.Int64
		mu          sync.Mutex
		firstErr    error
		wg          sync.WaitGroup
	)
	finished := make(chan struct{}) // closed once limit messages completed
	var finishOnce sync.Once
	for w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				n, err := fn(ctx, w)
				if errors.Is(err, errDrained) {
					return
				}
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = fmt.Errorf("worker %d: %w", w, err)
						}
						mu.Unlock()
						cancel()
					}
					return
				}
				if n == 0 {
					empty.Add(1)
					continue
				}
				if total := done.Add(int64(n)); limit > 0 && total >= limit {
					finishOnce.Do(func() { close(finished) })
				}
			}
		})
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()

	readCPU := func() cpuSample {
		if cpu == nil {
			return cpuSample{}
		}
		return cpu()
	}
	start := time.Now()
	startMsgs, startCPU, startEmpty := int64(0), readCPU(), int64(0)
	warm := time.NewTimer(win.warmup)
	defer warm.Stop()
	ended := false
	wait := func() {}
	select {
	case <-warm.C:
		start, startMsgs, startCPU, startEmpty = time.Now(), done.Load(), readCPU(), empty.Load()
		if win.atStart != nil {
			wait = win.atStart()
		}
	case <-finished:
		ended = true // drained during warm-up: the whole run is the window
	case <-allDone:
		ended = true
	case <-ctx.Done():
	}
	if !ended {
		t := time.NewTimer(win.duration)
		select {
		case <-t.C:
		case <-finished:
		case <-allDone:
		case <-ctx.Done():
		}
		t.Stop()
	}
	m := measurement{msgs: done.Load() - startMsgs, start: start, elapsed: time.Since(start), cpu: readCPU().sub(startCPU),
		empty: empty.Load() - startEmpty, inWarmup: ended}
	cancel()
	<-allDone
	wait()
	if firstErr != nil {
		return m, firstErr
	}
	return m, parent.Err()
}
