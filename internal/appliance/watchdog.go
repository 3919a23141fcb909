package appliance

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/queenmq/queen/internal/sdnotify"
)

// AcceptWatch wraps a served listener to tell whether the HTTP accept loop is alive:
// it is either blocked in Accept (idle is healthy) or returned from it only moments
// ago. Once the listener is closed (draining), there is no loop to watch.
type AcceptWatch struct {
	net.Listener
	inAccept   atomic.Bool
	lastReturn atomic.Int64 // unix nanoseconds
	closed     atomic.Bool
}

// NewAcceptWatch watches ln.
func NewAcceptWatch(ln net.Listener) *AcceptWatch {
	aw := &AcceptWatch{Listener: ln}
	aw.lastReturn.Store(time.Now().UnixNano())
	return aw
}

// Accept is the listener's, timed.
func (aw *AcceptWatch) Accept() (net.Conn, error) {
	aw.inAccept.Store(true)
	c, err := aw.Listener.Accept()
	aw.lastReturn.Store(time.Now().UnixNano())
	aw.inAccept.Store(false)
	return c, err
}

// Close closes the listener; a closed listener is never stalled.
func (aw *AcceptWatch) Close() error {
	aw.closed.Store(true)
	return aw.Listener.Close()
}

// StalledFor is how long the accept loop has been out of Accept, or 0 when it is in
// Accept or the listener is closed.
func (aw *AcceptWatch) StalledFor() time.Duration {
	if aw.inAccept.Load() || aw.closed.Load() {
		return 0
	}
	return time.Since(time.Unix(0, aw.lastReturn.Load()))
}

// Probe is one round of the watchdog's checks. It proves that the parts that serve
// clients still make progress: each accept loop is accepting, each handler chain
// answers GET Path with 200, and each of Checks passes. A daemon's probe touches no
// database: an outage is a reason to report "not ready" and wait, never to be killed
// and restarted.
type Probe struct {
	// Accepts are the watched listeners; MaxStall is how long a loop may stay out of
	// Accept.
	Accepts  []*AcceptWatch
	MaxStall time.Duration
	// Handlers answer an in-process GET Path.
	Handlers []http.Handler
	Path     string
	// Checks are the daemon's own, e.g. locking a registry that a deadlock would hold.
	Checks []func(context.Context) error
}

// Run is one round of the checks.
func (p Probe) Run(ctx context.Context) error {
	for _, aw := range p.Accepts {
		if d := aw.StalledFor(); d > p.MaxStall {
			return fmt.Errorf("HTTP accept loop has not called Accept for %s (%s)", d.Round(time.Millisecond), aw.Addr())
		}
	}
	for _, h := range p.Handlers {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.Path, nil)
		if err != nil {
			return err
		}
		req.RemoteAddr = "127.0.0.1:0"
		w := &probeWriter{header: make(http.Header)}
		h.ServeHTTP(w, req)
		if w.status != http.StatusOK {
			return fmt.Errorf("GET %s answered %d", p.Path, w.status)
		}
	}
	for _, check := range p.Checks {
		if err := check(ctx); err != nil {
			return err
		}
	}
	return nil
}

// probeWriter is the ResponseWriter of the in-process request.
type probeWriter struct {
	header http.Header
	status int
}

func (w *probeWriter) Header() http.Header { return w.header }

func (w *probeWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return len(p), nil
}

func (w *probeWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

// Watchdog sends systemd a keep-alive (WATCHDOG=1) every third of WatchdogSec=, each
// one only after a fresh round of ProbeFunc succeeded within that third. A probe that
// fails, or hangs (a deadlocked lock), withholds the keep-alives; systemd then kills
// the process with SIGABRT (the Go runtime prints every goroutine's stack to the
// journal) and Restart=on-failure starts a new one. Only one probe runs at a time, so
// a hung probe costs one goroutine, not one per tick. All its timing is the time
// package's, with no I/O of its own, so tests drive it with testing/synctest.
type Watchdog struct {
	Interval      time.Duration // WatchdogSec=; 0: no watchdog
	KeepaliveFunc func() error  // sends one WATCHDOG=1
	ProbeFunc     func(context.Context) error
	Logger        *slog.Logger
	// healthy is whether the last probe result was a pass; it makes the log say when
	// keep-alives stop and resume, not at every round.
	healthy bool
}

// NewWatchdog returns the watchdog of n's interval, probing with probe.
func NewWatchdog(n *sdnotify.Notifier, probe func(context.Context) error, logger *slog.Logger) *Watchdog {
	return &Watchdog{Interval: n.WatchdogInterval(), KeepaliveFunc: n.Watchdog, ProbeFunc: probe, Logger: logger}
}

// Run probes and sends keep-alives until ctx is done; without a watchdog it returns
// at once.
func (w *Watchdog) Run(ctx context.Context) error {
	if w.Interval <= 0 {
		return nil
	}
	every := w.Interval / 3
	tick := time.NewTicker(every)
	defer tick.Stop()
	w.Logger.Info("systemd watchdog on", "interval", w.Interval.String(), "keepalive_every", every.String())

	w.healthy = true
	result := make(chan error, 1)
	running, started := false, time.Time{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-result:
			running = false
			if err == nil && time.Since(started) > every {
				err = fmt.Errorf("liveness probe took %s (limit %s)", time.Since(started).Round(time.Millisecond), every)
			}
			w.report(err)
			if err == nil {
				NotifyWarn(w.Logger, "WATCHDOG=1", w.KeepaliveFunc())
			}
		case <-tick.C:
			if running {
				if time.Since(started) > every {
					w.report(fmt.Errorf("liveness probe has not returned for %s", time.Since(started).Round(time.Millisecond)))
				}
				continue
			}
			running, started = true, time.Now()
			go func() {
				pctx, cancel := context.WithTimeout(ctx, every)
				defer cancel()
				result <- w.ProbeFunc(pctx)
			}()
		}
	}
}

// report logs a change between passing and failing rounds.
func (w *Watchdog) report(err error) {
	switch {
	case err != nil && w.healthy:
		w.Logger.Error("liveness probe failed; withholding systemd watchdog keep-alives", "err", err)
	case err == nil && !w.healthy:
		w.Logger.Info("liveness probe passes again; systemd watchdog keep-alives resumed")
	}
	w.healthy = err == nil
}
