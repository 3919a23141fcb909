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

// startPprof serves Go's profiling endpoints on a listener of their own at addr
// (QUEEN_PPROF_ADDR; empty: none, and stop does nothing), apart from the API so that
// they never pass its middleware and can be bound to loopback while the API is not.
// The returned stop closes the listener, ends running profiles and waits for the
// server to return. A listen failure is a startup error, like the API port's.
//
// Importing net/http/pprof registers its handlers on http.DefaultServeMux as a side
// effect; nothing in queen serves that mux, so only this explicit one is reachable.
func startPprof(ctx context.Context, addr string, logger *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("daemon: QUEEN_PPROF_ADDR: listen: %w", err)
	}
	// Requests outlive ctx's cancellation (profiling the drain is allowed) until stop.
	baseCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	srv := &http.Server{
		Handler:           pprofMux(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("profiling listener failed", "err", err)
		}
	}()
	logger.Info("profiling endpoints listening", "addr", ln.Addr().String())
	if host, _, _ := net.SplitHostPort(addr); !isLoopback(host) {
		logger.Warn("profiling endpoints on a non-loopback address; they have no authentication", "addr", ln.Addr().String())
	}
	return func() {
		cancelRequests()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), pprofStopTimeout)
		defer cancel()
		if err := srv.Shutdown(shutdownCtx); err != nil {
			_ = srv.Close()
		}
		<-served
	}, nil
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
