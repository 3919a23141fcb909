package appliance

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// Lifecycle runs a daemon's long-running components under one errgroup: the first
// component to fail cancels Stopping, which starts the staged stop, and its error is
// what Wait returns. Each component belongs to a Tier whose context only the tier's
// own stop cancels, so that the stages stop the tiers one after the other, in the
// order the stop needs, rather than all at once.
type Lifecycle struct {
	group *errgroup.Group
	// stopping is done once the caller's context is (a signal) or a component failed;
	// its cause says which.
	stopping context.Context
	// base carries the caller's values without its cancellation: the tiers' parent.
	base context.Context
}

// NewLifecycle returns a lifecycle that starts stopping when ctx is done.
func NewLifecycle(ctx context.Context) *Lifecycle {
	g, stopping := errgroup.WithContext(ctx)
	return &Lifecycle{group: g, stopping: stopping, base: context.WithoutCancel(ctx)}
}

// Stopping is done once the stop begins: the caller's context is done, or a component
// failed. Its cause says which.
func (lc *Lifecycle) Stopping() context.Context { return lc.stopping }

// NewTier returns an empty tier whose context is a child of the caller's values
// only: it runs until its stage stops it.
func (lc *Lifecycle) NewTier() *Tier { return lc.newTier(lc.base) }

// NewEarlyTier returns an empty tier whose context is a child of Stopping: it stops
// by itself as soon as the stop begins (its stage still waits for it).
func (lc *Lifecycle) NewEarlyTier() *Tier { return lc.newTier(lc.stopping) }

func (lc *Lifecycle) newTier(parent context.Context) *Tier {
	ctx, cancel := context.WithCancel(parent)
	return &Tier{lc: lc, ctx: ctx, cancel: cancel}
}

// Wait waits for every component and returns the first error one of them returned.
// Call it once every tier is stopped.
func (lc *Lifecycle) Wait() error { return lc.group.Wait() }

// Tier is a set of components that one stage of the stop stops together.
type Tier struct {
	lc     *Lifecycle
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start runs run in the lifecycle's group with the tier's context. run has the shape
// of every component: it blocks until its context is done, cleans up and returns nil;
// an error instead stops the whole daemon.
func (t *Tier) Start(run func(context.Context) error) {
	t.wg.Add(1)
	t.lc.group.Go(func() error {
		defer t.wg.Done()
		return run(t.ctx)
	})
}

// Stop cancels the tier's context and waits until all its components returned.
func (t *Tier) Stop() {
	t.cancel()
	t.wg.Wait()
}

// Infallible gives a Run that cannot fail the shape of a component.
func Infallible(run func(context.Context)) func(context.Context) error {
	return func(ctx context.Context) error {
		run(ctx)
		return nil
	}
}

// Stage is one named step of a stop.
type Stage struct {
	Name string
	Run  func()
}

// RunStages runs the stop's stages in order, logging each, and logs "stopped" last.
func RunStages(logger *slog.Logger, stages []Stage) {
	for _, s := range stages {
		logger.Info("shutdown stage", "stage", s.Name)
		s.Run()
	}
	logger.Info("stopped")
}

// LogStopCause logs why the stop begins: the caller's cancellation (a signal) or the
// component that failed.
func LogStopCause(logger *slog.Logger, stopping context.Context) {
	logger.Info("shutting down", "reason", context.Cause(stopping).Error())
}

// WaitDelay is the shutdown delay: it keeps serving for delay while the daemon
// reports not ready, so load balancers and Kubernetes endpoints stop sending before
// the listeners close. It returns early, with a warning, when one of servers stopped
// serving.
func WaitDelay(logger *slog.Logger, delay time.Duration, servers ...*Server) {
	if delay <= 0 {
		return
	}
	logger.Info("not ready; serving until the load balancers notice, then draining", "delay", delay.String())
	stopped := make(chan *Server, len(servers)) // buffered: the watchers end with the servers
	for _, s := range servers {
		go func() {
			<-s.served
			stopped <- s
		}()
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
	case s := <-stopped:
		logger.Warn("HTTP server stopped during the shutdown delay", "err", s.serveErr)
	}
}
