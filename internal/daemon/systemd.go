package daemon

// The daemon's side of running under systemd (docs/systemd.md): the listener from
// socket activation, status lines while waiting for PostgreSQL, and the watchdog.
// Everything here also works without systemd: no passed sockets means bind HOST:PORT,
// no NOTIFY_SOCKET means the notifier does nothing.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-systemd/v22/activation"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/sdnotify"
)

// sourceActivation begins the listener source of sockets passed by systemd.
const sourceActivation = "systemd socket activation"

// listen returns the listener to serve: the sockets systemd passed (queen.socket,
// LISTEN_FDS), merged into one, or else HOST:PORT bound here. It reports which, for
// the log. activation.Files takes the descriptors and unsets LISTEN_*; it can only
// be used once per process, which is why this is the only caller.
func listen(cfg *config.Config) (ln net.Listener, source string, err error) {
	files := activation.Files(true)
	if len(files) == 0 {
		ln, err = net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
		if err != nil {
			return nil, "", fmt.Errorf("daemon: listen: %w", err)
		}
		return ln, "bound HOST:PORT", nil
	}
	lns := make([]net.Listener, 0, len(files))
	names := make([]string, 0, len(files))
	for _, f := range files {
		l, err := net.FileListener(f)
		f.Close()
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, "", fmt.Errorf("daemon: socket %q passed by systemd is not a stream listener: %w", f.Name(), err)
		}
		lns = append(lns, l)
		names = append(names, f.Name()+"="+l.Addr().String())
	}
	source = sourceActivation + " (" + strings.Join(names, ", ") + "); HOST and PORT are ignored"
	if len(lns) == 1 {
		return lns[0], source, nil
	}
	return newMultiListener(lns), source, nil
}

// multiListener serves several passed sockets (a queen.socket with more than one
// ListenStream=) through one net.Listener, so the HTTP server and its shutdown stay
// the same as with one socket.
type multiListener struct {
	lns       []net.Listener
	conns     chan acceptResult
	done      chan struct{}
	closeOnce sync.Once
}

type acceptResult struct {
	conn net.Conn
	err  error
}

func newMultiListener(lns []net.Listener) *multiListener {
	ml := &multiListener{lns: lns, conns: make(chan acceptResult), done: make(chan struct{})}
	for _, l := range lns {
		go ml.forward(l)
	}
	return ml
}

// forward hands l's connections and errors to Accept until l or ml is closed.
func (ml *multiListener) forward(l net.Listener) {
	for {
		c, err := l.Accept()
		select {
		case ml.conns <- acceptResult{c, err}:
		case <-ml.done:
			if c != nil {
				c.Close()
			}
			return
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

func (ml *multiListener) Accept() (net.Conn, error) {
	select {
	case r := <-ml.conns:
		return r.conn, r.err
	case <-ml.done:
		return nil, net.ErrClosed
	}
}

func (ml *multiListener) Close() error {
	var errs []error
	ml.closeOnce.Do(func() {
		close(ml.done)
		for _, l := range ml.lns {
			errs = append(errs, l.Close())
		}
	})
	return errors.Join(errs...)
}

// Addr is the first socket's address.
func (ml *multiListener) Addr() net.Addr { return ml.lns[0].Addr() }

// newNotifier returns opts.Notifier, or the notifier of this process (a no-op
// outside a Type=notify unit). A malformed WATCHDOG_USEC is logged and turns the
// watchdog off rather than stopping the broker.
func newNotifier(opts Options, logger *slog.Logger) *sdnotify.Notifier {
	if opts.Notifier != nil {
		return opts.Notifier
	}
	n, err := sdnotify.New()
	if err != nil {
		logger.Warn("systemd watchdog disabled", "err", err)
	}
	return n
}

// notifyWarn logs a failed notification at Warn: under systemd a lost READY=1 or
// keep-alive means the unit will be killed, and the log is the only trace of why
// (e.g. RestrictAddressFamilies= without AF_UNIX).
func notifyWarn(logger *slog.Logger, what string, err error) {
	if err != nil {
		logger.Warn("could not notify systemd", "message", what, "err", err)
	}
}

// pgTarget names the database for status lines, without credentials.
func pgTarget(cfg *config.Config) string {
	return fmt.Sprintf("%s database %s", cfg.PGServers(), cfg.PGDB)
}

// reportWaiting tells systemd, after a failed attempt to reach PostgreSQL, what the
// start-up waits for, and extends the start timeout past the next attempt: while
// queen makes attempts it is making progress, so it waits for PostgreSQL as long as
// it takes (TimeoutStartSec= only fires if queen stops reporting, i.e. hangs).
// Clients meanwhile queue in the socket's backlog.
func reportWaiting(n *sdnotify.Notifier, cfg *config.Config, attempt int, retryIn time.Duration, err error, logger *slog.Logger) {
	msg := err.Error()
	if hint := pgConnectHint(err); hint != "" {
		msg = hint // pgx's text puts the cause last, past the cut
	}
	if len(msg) > 160 {
		msg = msg[:160] + "…"
	}
	status := fmt.Sprintf("waiting for PostgreSQL at %s (attempt %d, next in %s): %s",
		pgTarget(cfg), attempt, retryIn, msg)
	notifyWarn(logger, "EXTEND_TIMEOUT_USEC", n.ExtendTimeout(retryIn+cfg.DBConnectionTimeout+startMargin, status))
}

// startMargin is how much longer than the next attempt needs a start-timeout
// extension lasts: room for one schema apply.
const startMargin = 30 * time.Second

// acceptWatch wraps the served listener to tell whether the HTTP accept loop is
// alive: it is either blocked in Accept (idle is healthy) or returned from it only
// moments ago. Once the listener is closed (draining), there is no loop to watch.
type acceptWatch struct {
	net.Listener
	inAccept   atomic.Bool
	lastReturn atomic.Int64 // unix nanoseconds
	closed     atomic.Bool
}

func newAcceptWatch(ln net.Listener) *acceptWatch {
	aw := &acceptWatch{Listener: ln}
	aw.lastReturn.Store(time.Now().UnixNano())
	return aw
}

func (aw *acceptWatch) Accept() (net.Conn, error) {
	aw.inAccept.Store(true)
	c, err := aw.Listener.Accept()
	aw.lastReturn.Store(time.Now().UnixNano())
	aw.inAccept.Store(false)
	return c, err
}

func (aw *acceptWatch) Close() error {
	aw.closed.Store(true)
	return aw.Listener.Close()
}

// stalledFor is how long the accept loop has been out of Accept, or 0 when it is
// in Accept or the listener is closed.
func (aw *acceptWatch) stalledFor() time.Duration {
	if aw.inAccept.Load() || aw.closed.Load() {
		return 0
	}
	return time.Since(time.Unix(0, aw.lastReturn.Load()))
}

// livenessProbe is one round of the watchdog's checks. It proves that the parts that
// serve clients still make progress: the HTTP accept loop is accepting, the handler
// chain answers GET /health/live, and the broker's registry of parked long-polls can
// be locked. None of it touches PostgreSQL: a database outage is a reason to report
// "not ready" and wait, never to be killed and restarted.
func livenessProbe(aw *acceptWatch, h http.Handler, b *broker.Broker, maxStall time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		if d := aw.stalledFor(); d > maxStall {
			return fmt.Errorf("HTTP accept loop has not called Accept for %s", d.Round(time.Millisecond))
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "/health/live", nil)
		if err != nil {
			return err
		}
		req.RemoteAddr = "watchdog"
		w := &probeWriter{header: make(http.Header)}
		h.ServeHTTP(w, req)
		if w.status != http.StatusOK {
			return fmt.Errorf("GET /health/live answered %d", w.status)
		}
		_ = b.ParkedPolls()
		return nil
	}
}

// probeWriter is the ResponseWriter of the in-process /health/live request.
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

// watchdog sends systemd a keep-alive (WATCHDOG=1) every third of WatchdogSec=, each
// one only after a fresh round of probe succeeded within that third. A probe that
// fails, or hangs (a deadlocked lock), withholds the keep-alives; systemd then kills
// the process with SIGABRT (the Go runtime prints every goroutine's stack to the
// journal) and Restart=on-failure starts a new one. Only one probe runs at a time, so
// a hung probe costs one goroutine, not one per tick. All its timing is the time
// package's, with no I/O of its own, so tests drive it with testing/synctest.
type watchdog struct {
	interval      time.Duration // WatchdogSec=; 0: no watchdog
	keepaliveFunc func() error  // sends one WATCHDOG=1
	probeFunc     func(context.Context) error
	logger        *slog.Logger
	// healthy is whether the last probe result was a pass; it makes the log say when
	// keep-alives stop and resume, not at every round.
	healthy bool
}

func newWatchdog(n *sdnotify.Notifier, probe func(context.Context) error, logger *slog.Logger) *watchdog {
	return &watchdog{interval: n.WatchdogInterval(), keepaliveFunc: n.Watchdog, probeFunc: probe, logger: logger}
}

// Run probes and sends keep-alives until ctx is done; without a watchdog it returns
// at once.
func (w *watchdog) Run(ctx context.Context) error {
	if w.interval <= 0 {
		return nil
	}
	every := w.interval / 3
	tick := time.NewTicker(every)
	defer tick.Stop()
	w.logger.Info("systemd watchdog on", "interval", w.interval.String(), "keepalive_every", every.String())

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
				notifyWarn(w.logger, "WATCHDOG=1", w.keepaliveFunc())
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
				result <- w.probeFunc(pctx)
			}()
		}
	}
}

// report logs a change between passing and failing rounds.
func (w *watchdog) report(err error) {
	switch {
	case err != nil && w.healthy:
		w.logger.Error("liveness probe failed; withholding systemd watchdog keep-alives", "err", err)
	case err == nil && !w.healthy:
		w.logger.Info("liveness probe passes again; systemd watchdog keep-alives resumed")
	}
	w.healthy = err == nil
}
