package daemontest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/daemon"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/sdnotify"
	"github.com/queenmq/queen/internal/testlog"
)

// StartTimeout bounds how long a daemon may take to become ready, the schema applied
// to a fresh database under -race included.
const StartTimeout = 60 * time.Second

// stopMargin is what a stop may take beyond the configured drain: stopping the
// maintenance jobs and the drainer, and closing the spool and the pool.
const stopMargin = 10 * time.Second

// probeTimeout bounds the GET /health/ready that confirms readiness.
const probeTimeout = 10 * time.Second

// Options says how Start runs a daemon. The zero value is a quiet broker on
// 127.0.0.1:0 against a fresh database, logging to t.Log.
type Options struct {
	// Env holds NAME=value variables given to config.Load ahead of everything Start
	// adds, so they override it.
	Env []string
	// DBURL is the database to serve (a second broker on a first one's database, a
	// database prepared beforehand, a private cluster); "" is a fresh pgtest database.
	DBURL string
	// NoDatabase adds no PG_* variables and makes no database: Env says where
	// PostgreSQL is (a private cluster, a port nothing listens on), or the test needs
	// none because the daemon stops or waits before connecting.
	NoDatabase bool
	// SpoolDir is FILE_BUFFER_DIR; "" is a fresh temporary directory.
	SpoolDir string
	// Logs captures the daemon's output; nil sends each line to t.Log. The end of the
	// captured log is added to the error when the daemon does not start.
	Logs *testlog.Buffer
	// Listener is the API's listener; nil is a fresh one on 127.0.0.1:0.
	Listener net.Listener
	// Notifier and Reload are passed to daemon.Run as daemon.Options.Notifier and
	// daemon.Options.Reload.
	Notifier *sdnotify.Notifier
	Reload   <-chan os.Signal
	// NoWait returns as soon as daemon.Run is started, without waiting for readiness:
	// for a daemon that cannot become ready yet (its PostgreSQL is down) or whose boot
	// the test watches itself.
	NoWait bool
}

// Server is one daemon run by daemon.Run on a goroutine of the test process.
type Server struct {
	// Addr is the served host:port, and URL is "http://" + Addr.
	Addr, URL string
	// DBURL is the database the daemon serves; "" with Options.NoDatabase.
	DBURL string

	hc        *http.Client
	cancel    context.CancelFunc
	ready     chan struct{} // closed when the daemon reports readiness
	done      chan struct{} // closed when daemon.Run has returned; runErr is its result
	runErr    error
	stopLimit time.Duration
	logs      *testlog.Buffer
	// reported is set once Run's result is the test's to check (Stop was called, or
	// Launch or StartError returned it), so that the cleanup does not report it again.
	reported atomic.Bool

	stopOnce sync.Once
	stopErr  error
}

// Start runs a daemon as o says, waits until it is ready (unless o.NoWait) and
// registers a cleanup that stops it and fails the test unless daemon.Run returns nil
// in time. It fails the test at once if the daemon does not become ready.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := Launch(t, o)
	if err != nil {
		t.Fatalf("daemontest: %v", err)
	}
	return s
}

// Launch is Start that returns the daemon's failure to start instead of failing the
// test, for a start made off the test goroutine (a restart by the checker). Options
// that Launch must fill in itself (a fresh database, a temporary spool directory) can
// still fail the test, so such a caller gives DBURL or NoDatabase, and SpoolDir.
func Launch(t testing.TB, o Options) (*Server, error) {
	t.Helper()
	s := &Server{ready: make(chan struct{}), done: make(chan struct{}), logs: o.Logs,
		hc: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}
	env := o.Env
	if !o.NoDatabase {
		s.DBURL = o.DBURL
		if s.DBURL == "" {
			s.DBURL = pgtest.NewDBURL(t)
		}
		pg, err := pgEnv(s.DBURL)
		if err != nil {
			return nil, err
		}
		env = append(env[:len(env):len(env)], pg...)
	}
	spool := o.SpoolDir
	if spool == "" {
		spool = t.TempDir()
	}
	env = append(env[:len(env):len(env)], "HOST=127.0.0.1", "LOG_LEVEL=warn", "DB_POOL_SIZE=8", "FILE_BUFFER_DIR="+spool)
	cfg, err := config.Load(env)
	if err != nil {
		return nil, fmt.Errorf("load the configuration: %w", err)
	}
	s.stopLimit = cfg.ShutdownDelay + cfg.ShutdownTimeout + stopMargin

	ln := o.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
		// Run closes it too, but not when it fails before serving.
		t.Cleanup(func() { _ = ln.Close() })
	}
	s.Addr = ln.Addr().String()
	s.URL = "http://" + s.Addr
	var stdout io.Writer = o.Logs
	if o.Logs == nil {
		stdout = testlog.Writer(t) // before the stop's cleanup, so that it runs after it
	}

	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	var readyOnce sync.Once
	go func() {
		defer close(s.done)
		s.runErr = daemon.Run(ctx, cfg, daemon.Options{
			Stdout:    stdout,
			Listener:  ln,
			ReadyFunc: func(string) { readyOnce.Do(func() { close(s.ready) }) },
			Notifier:  o.Notifier,
			Reload:    o.Reload,
		})
	}()
	t.Cleanup(func() {
		if err := s.stop(); err != nil && !s.reported.Load() {
			t.Errorf("daemontest: stop the daemon serving %s: %v", s.Addr, err)
		}
	})
	if o.NoWait {
		return s, nil
	}
	if err := s.waitReady(); err != nil {
		_ = s.Stop() // its error is err, or follows from it
		return nil, err
	}
	return s, nil
}

// StartError runs a daemon as o says (o.NoWait is ignored) that must refuse to start,
// and returns daemon.Run's error. It fails the test if the daemon becomes ready, or if
// Run returns nil or does not return within StartTimeout.
func StartError(t testing.TB, o Options) error {
	t.Helper()
	o.NoWait = true
	s := Start(t, o)
	timer := time.NewTimer(StartTimeout)
	defer timer.Stop()
	select {
	case <-s.done:
	case <-s.ready:
		t.Fatalf("daemontest: the daemon serving %s became ready, but it must refuse to start", s.Addr)
	case <-timer.C:
		t.Fatalf("daemontest: daemon.Run has not returned within %s; it must refuse to start", StartTimeout)
	}
	if s.runErr == nil {
		t.Fatalf("daemontest: daemon.Run returned nil, but it must refuse to start")
	}
	s.reported.Store(true)
	return s.runErr
}

// waitReady waits for the daemon's readiness signal, then requires GET /health/ready
// to agree.
func (s *Server) waitReady() error {
	timer := time.NewTimer(StartTimeout)
	defer timer.Stop()
	select {
	case <-s.ready:
	case <-s.done:
		return fmt.Errorf("daemon.Run returned before the daemon was ready: %w%s", s.runErr, s.logTail())
	case <-timer.C:
		return fmt.Errorf("the daemon serving %s is not ready within %s%s", s.Addr, StartTimeout, s.logTail())
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/health/ready", nil)
	if err != nil {
		return err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return fmt.Errorf("GET /health/ready once the daemon reported ready: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /health/ready answered %d once the daemon reported ready%s", resp.StatusCode, s.logTail())
	}
	return nil
}

// Client returns an HTTP client for the daemon with a connection pool of its own,
// closed when the daemon stops. The process's default pool is no place for a test's
// requests: every httptest.Server of a parallel test closes its idle connections when
// it closes, and a request that had just picked one fails without a retry.
func (s *Server) Client() *http.Client { return s.hc }

// logTail is the end of the captured log, for an error message; "" without capture.
func (s *Server) logTail() string {
	if s.logs == nil {
		return ""
	}
	return "; the log ends:\n" + s.logs.Tail(4096)
}

// Cancel starts the stop, as SIGTERM does, and returns at once: the daemon drains
// while the test watches. Stop then waits for it.
func (s *Server) Cancel() { s.cancel() }

// Stop cancels daemon.Run's context and waits for Run to return, at most the
// configured drain plus a small margin. It returns Run's result, or an error when Run
// has not returned in time; the test checks it, as the cleanup then no longer does.
// Only the first call stops; later ones return its result.
func (s *Server) Stop() error {
	s.reported.Store(true)
	return s.stop()
}

// stop is Stop without taking over the report of its result.
func (s *Server) stop() error {
	s.stopOnce.Do(func() {
		defer s.hc.CloseIdleConnections()
		s.cancel()
		timer := time.NewTimer(s.stopLimit)
		defer timer.Stop()
		select {
		case <-s.done:
			s.stopErr = s.runErr
		case <-timer.C:
			s.stopErr = errors.New("daemon.Run did not return within " + s.stopLimit.String() + " of the stop")
		}
	})
	return s.stopErr
}
