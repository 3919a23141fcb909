package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/queenmq/queen/internal/sdnotify"
)

// runWatchdog sends systemd a keep-alive (WATCHDOG=1) every third of WatchdogSec=,
// each one only after both HTTP handlers answered an in-process GET /health within
// that third. A wedged handler chain withholds the keep-alives; systemd then kills
// the process with SIGABRT (the Go runtime prints every goroutine's stack to the
// journal) and Restart=on-failure starts a new one. Neither the database nor the
// brokers are probed: their outages are reported by /health/ready, never a reason to
// be restarted. Without a watchdog (WatchdogSec= unset, or no systemd) it returns
// at once.
func runWatchdog(ctx context.Context, n *sdnotify.Notifier, handlers []http.Handler, logger *slog.Logger) {
	interval := n.WatchdogInterval()
	if interval <= 0 {
		return
	}
	every := interval / 3
	logger.Info("systemd watchdog on", "interval", interval.String(), "keepalive_every", every.String())
	tick := time.NewTicker(every)
	defer tick.Stop()
	healthy := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := probeHandlers(ctx, handlers, every)
		switch {
		case err != nil && healthy:
			logger.Error("liveness probe failed; withholding systemd watchdog keep-alives", "err", err)
		case err == nil && !healthy:
			logger.Info("liveness probe passes again; systemd watchdog keep-alives resumed")
		}
		healthy = err == nil
		if healthy {
			if err := n.Watchdog(); err != nil {
				logger.Warn("could not notify systemd", "message", "WATCHDOG=1", "err", err)
			}
		}
	}
}

// probeHandlers serves GET /health on each handler in process; it fails when one
// does not answer 200 within limit.
func probeHandlers(ctx context.Context, handlers []http.Handler, limit time.Duration) error {
	pctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		for _, h := range handlers {
			req, err := http.NewRequestWithContext(pctx, http.MethodGet, "/health", nil)
			if err != nil {
				done <- err
				return
			}
			req.RemoteAddr = "127.0.0.1:0"
			w := &statusWriter{header: make(http.Header)}
			h.ServeHTTP(w, req)
			if w.status != http.StatusOK {
				done <- fmt.Errorf("GET /health answered %d", w.status)
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		return err
	case <-pctx.Done():
		return fmt.Errorf("GET /health has not answered within %s", limit)
	}
}

// statusWriter is the ResponseWriter of the in-process probe: it keeps the status.
type statusWriter struct {
	header http.Header
	status int
}

func (w *statusWriter) Header() http.Header { return w.header }

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return len(p), nil
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}
