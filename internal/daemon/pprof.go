package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// pprofStopTimeout bounds how long stopping the profiling listener waits for its
// requests; cancelling their context ends a running CPU profile or trace at once.
const pprofStopTimeout = 2 * time.Second

// pprofServer serves Go's profiling endpoints on a listener of their own
// (QUEEN_PPROF_ADDR), apart from the API so that they never pass its middleware and
// can be bound to loopback while the API is not.
//
// Importing net/http/pprof registers its handlers on http.DefaultServeMux as a side
// effect; nothing in queen serves that mux, so only this explicit one is reachable.
type pprofServer struct {
	srv    *http.Server
	ln     net.Listener
	logger *slog.Logger
	// cancelRequests ends the requests' context: running CPU profiles and traces stop.
	cancelRequests context.CancelFunc
}

// newPprofServer listens on addr; an empty addr means no profiling (nil, nil). A
// listen failure is a startup error, like the API port's.
func newPprofServer(ctx context.Context, addr string, logger *slog.Logger) (*pprofServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("daemon: QUEEN_PPROF_ADDR: listen: %w", err)
	}
	// Requests outlive the stop's start (profiling the drain is allowed), until Run returns.
	baseCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	p := &pprofServer{
		srv: &http.Server{
			Handler:           pprofMux(),
			ReadHeaderTimeout: 10 * time.Second,
			BaseContext:       func(net.Listener) context.Context { return baseCtx },
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		},
		ln: ln, logger: logger, cancelRequests: cancelRequests,
	}
	logger.Info("profiling endpoints listening", "addr", ln.Addr().String())
	if host, _, _ := net.SplitHostPort(addr); !isLoopback(host) {
		logger.Warn("profiling endpoints on a non-loopback address; they have no authentication", "addr", ln.Addr().String())
	}
	return p, nil
}

// Run serves until ctx is done, then closes the listener, ends running profiles and
// waits for the server to return. A failing listener is logged, not fatal: profiling
// is no reason to stop the broker.
func (p *pprofServer) Run(ctx context.Context) error {
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := p.srv.Serve(p.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.logger.Warn("profiling listener failed", "err", err)
		}
	}()
	<-ctx.Done()
	p.cancelRequests()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), pprofStopTimeout)
	defer cancel()
	if err := p.srv.Shutdown(shutdownCtx); err != nil {
		_ = p.srv.Close()
	}
	<-served
	return nil
}

// closeListener releases the listener of a server that never ran.
func (p *pprofServer) closeListener() {
	p.cancelRequests()
	_ = p.ln.Close()
}

// pprofMux routes the profiling endpoints. Index also serves every named runtime
// profile (heap, goroutine, allocs, block, mutex, threadcreate) under /debug/pprof/;
// the common ones are listed explicitly so that the routes are visible here.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	for _, name := range []string{"heap", "goroutine", "allocs", "block", "mutex", "threadcreate"} {
		mux.Handle("/debug/pprof/"+name, pprof.Handler(name))
	}
	return mux
}
