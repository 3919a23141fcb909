package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/queenmq/queen/internal/config"
)

// Fixed HTTP server timeouts. The body's is QUEEN_READ_TIMEOUT (newHTTPServer).
const (
	// readHeaderTimeout bounds the arrival of a request's headers, from its first byte.
	readHeaderTimeout = 10 * time.Second
	// idleTimeout closes a keep-alive connection that has not started a new request.
	idleTimeout = 120 * time.Second
)

// newHTTPServer builds the API's http.Server. ReadTimeout (QUEEN_READ_TIMEOUT) bounds
// the reading of a whole request, headers and body, so a client that sends its body
// slowly cannot hold a connection and a handler. It does not bound the handler or
// the response: net/http lifts the read deadline once the body is read to its end (or
// at once for a request without one), so long-polls and streamed answers run as long
// as they need. There is no WriteTimeout for the same reason.
func newHTTPServer(h http.Handler, cfg *config.Config, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.With("component", "httpapi").Handler(), slog.LevelWarn),
	}
}

// apiServer serves the API on the daemon's listener. Unlike the other components it
// is not stopped by a context: the stop closes its listener (stopAccepting) and waits
// for the requests in flight (drain) in two stages, with the broker's parked
// long-polls answered in between.
type apiServer struct {
	srv    *http.Server
	ln     *acceptWatch
	logger *slog.Logger
	// served is closed once Serve returned; serveErr is its error, set before.
	served   chan struct{}
	serveErr error
	// closed is closed by Shutdown right after it closed the listener.
	closed chan struct{}
	// shutdownErr receives Shutdown's result, which grace bounds (stopAccepting).
	shutdownErr chan error
	grace       context.Context
	endGrace    context.CancelFunc
}

func newAPIServer(ln net.Listener, h http.Handler, cfg *config.Config, logger *slog.Logger) *apiServer {
	s := &apiServer{
		srv:         newHTTPServer(h, cfg, logger),
		ln:          newAcceptWatch(ln),
		logger:      logger,
		served:      make(chan struct{}),
		closed:      make(chan struct{}),
		shutdownErr: make(chan error, 1),
	}
	var once sync.Once
	s.srv.RegisterOnShutdown(func() { once.Do(func() { close(s.closed) }) })
	return s
}

// serve serves until the stop stages shut the server down, then returns nil; any other
// end of Serve is an error, which stops the daemon. Its context is not used.
func (s *apiServer) serve(context.Context) error {
	err := s.srv.Serve(s.ln)
	s.serveErr = err
	close(s.served)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("daemon: serve: %w", err)
}

// stopAccepting starts the graceful shutdown, bounded by grace from now on, and
// returns once the listener is closed: new connections are refused (or, under socket
// activation, wait in the socket's backlog for the next process), idle ones closed.
func (s *apiServer) stopAccepting(grace time.Duration) {
	s.grace, s.endGrace = context.WithTimeoutCause(context.Background(), grace,
		fmt.Errorf("shutdown grace period of %s (QUEEN_SHUTDOWN_TIMEOUT) exceeded", grace))
	go func() { s.shutdownErr <- s.srv.Shutdown(s.grace) }()
	<-s.closed
}

// drain waits until the requests in flight are answered, or the grace period is over;
// then it closes the connections left.
func (s *apiServer) drain() {
	defer s.endGrace()
	if err := <-s.shutdownErr; err != nil {
		if s.grace.Err() != nil {
			err = context.Cause(s.grace)
		}
		s.logger.Warn("shutdown grace period exceeded; closing remaining connections", "err", err)
		_ = s.srv.Close()
	}
}
