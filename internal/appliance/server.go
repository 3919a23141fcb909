package appliance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Fixed HTTP server timeouts. The body's is the daemon's setting (NewHTTPServer).
const (
	// ReadHeaderTimeout bounds the arrival of a request's headers, from its first byte.
	ReadHeaderTimeout = 10 * time.Second
	// IdleTimeout closes a keep-alive connection that has not started a new request.
	IdleTimeout = 120 * time.Second
)

// NewHTTPServer builds an http.Server with the appliance's timeouts. readTimeout
// bounds the reading of a whole request, headers and body, so a client that sends its
// body slowly cannot hold a connection and a handler. It does not bound the handler
// or the response: net/http lifts the read deadline once the body is read to its end
// (or at once for a request without one), so long-polls and streamed answers run as
// long as they need. There is no WriteTimeout for the same reason. net/http's own
// messages (a bad TLS handshake, a panic) go to errorLog at errorLevel.
func NewHTTPServer(h http.Handler, readTimeout time.Duration, errorLog *slog.Logger, errorLevel slog.Level) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       readTimeout,
		IdleTimeout:       IdleTimeout,
		ErrorLog:          slog.NewLogLogger(errorLog.Handler(), errorLevel),
	}
}

// Server serves an http.Server on a listener. Unlike the other components it is not
// stopped by a context: the stop closes its listener (StopAccepting) and waits for the
// requests in flight (Drain) in two stages, so that a daemon can answer what it parks
// (long-polls) in between. Its listener is watched for the watchdog (AcceptWatch).
type Server struct {
	srv    *http.Server
	ln     *AcceptWatch
	logger *slog.Logger
	// served is closed once Serve returned; serveErr is its error, set before.
	served   chan struct{}
	serveErr error
	// closed is closed by Shutdown right after it closed the listener.
	closed chan struct{}
	// shutdownErr receives Shutdown's result, which grace bounds (StopAccepting).
	shutdownErr chan error
	grace       context.Context
	endGrace    context.CancelFunc
}

// NewServer returns the server of srv on ln; with srv.TLSConfig set it serves TLS.
func NewServer(ln net.Listener, srv *http.Server, logger *slog.Logger) *Server {
	s := &Server{
		srv:         srv,
		ln:          NewAcceptWatch(ln),
		logger:      logger,
		served:      make(chan struct{}),
		closed:      make(chan struct{}),
		shutdownErr: make(chan error, 1),
	}
	var once sync.Once
	s.srv.RegisterOnShutdown(func() { once.Do(func() { close(s.closed) }) })
	return s
}

// HTTP is the served http.Server.
func (s *Server) HTTP() *http.Server { return s.srv }

// Listener is the served listener, watched for the watchdog's probe.
func (s *Server) Listener() *AcceptWatch { return s.ln }

// Serve serves until the stop stages shut the server down, then returns nil; any
// other end of serving is an error, which stops the daemon. Its context is not used.
func (s *Server) Serve(context.Context) error {
	var err error
	if s.srv.TLSConfig != nil {
		err = s.srv.ServeTLS(s.ln, "", "")
	} else {
		err = s.srv.Serve(s.ln)
	}
	s.serveErr = err
	close(s.served)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("serve %s: %w", s.ln.Addr(), err)
}

// StopAccepting starts the graceful shutdown, bounded by grace from now on, and
// returns once the listener is closed: new connections are refused (or, under socket
// activation, wait in the socket's backlog for the next process), idle ones closed.
// setting names the grace period's setting, for the log.
func (s *Server) StopAccepting(grace time.Duration, setting string) {
	s.grace, s.endGrace = context.WithTimeoutCause(context.Background(), grace,
		fmt.Errorf("shutdown grace period of %s (%s) exceeded", grace, setting))
	go func() { s.shutdownErr <- s.srv.Shutdown(s.grace) }()
	<-s.closed
}

// Drain waits until the requests in flight are answered, or the grace period is over;
// then it closes the connections left. Call it after StopAccepting.
func (s *Server) Drain() {
	defer s.endGrace()
	if err := <-s.shutdownErr; err != nil {
		if s.grace.Err() != nil {
			err = context.Cause(s.grace)
		}
		s.logger.Warn("shutdown grace period exceeded; closing remaining connections", "err", err)
		_ = s.srv.Close()
	}
}
