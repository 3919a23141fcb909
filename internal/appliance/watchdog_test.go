package appliance

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/sdnotify"
	"github.com/queenmq/queen/internal/testclock"
	"github.com/queenmq/queen/internal/testlog"
)

// The timing tests below run in a testing/synctest bubble: time is fake, advance
// moves it forward at once, and synctest.Wait returns once every goroutine of the
// bubble is blocked, so "nothing happened for three intervals" is asserted exactly
// and without real waiting. The watchdog's keep-alives are counted by its
// keepaliveFunc, and the accept loop runs on an in-memory listener, since reads from
// real sockets are not blocking in the bubble's sense.

// TestWatchdogPingsOnlyWhileTheProbePasses: keep-alives flow while the probe passes,
// stop while it hangs (a deadlock) or fails, and resume when it passes again; the log
// says so once at each change.
func TestWatchdogPingsOnlyWhileTheProbePasses(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const interval = 300 * time.Millisecond // a round every 100 ms: at 100, 200, 300 ms…
		var pings atomic.Int64
		var mode atomic.Int32 // 0 pass, 1 hang, 2 fail
		release := make(chan struct{})
		var logs testlog.Buffer
		w := &Watchdog{
			Interval:      interval,
			KeepaliveFunc: func() error { pings.Add(1); return nil },
			ProbeFunc: func(ctx context.Context) error {
				switch mode.Load() {
				case 1:
					<-release // ignores ctx, like a goroutine stuck on a mutex
					return nil
				case 2:
					return errors.New("broken")
				}
				return nil
			},
			Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			require.NoError(t, w.Run(ctx))
		}()

		testclock.AdvanceBubble(350 * time.Millisecond) // halfway between rounds, so no round is at this instant
		synctest.Wait()
		require.EqualValues(t, 3, pings.Load(), "one keep-alive per passing round")

		mode.Store(1)
		testclock.AdvanceBubble(700 * time.Millisecond) // rounds from 400 ms: the first hangs, the next see it hang
		synctest.Wait()
		require.EqualValues(t, 3, pings.Load(), "a hung probe must stop the keep-alives")
		require.Equal(t, 1, strings.Count(logs.String(), "liveness probe failed"), "logged once, when the keep-alives stop")
		require.Equal(t, 1, strings.Count(logs.String(), "liveness probe has not returned"))

		mode.Store(2)
		close(release) // the hung round ends, too late to count
		testclock.AdvanceBubble(500 * time.Millisecond)
		synctest.Wait()
		require.EqualValues(t, 3, pings.Load(), "a failing probe must stop the keep-alives")
		require.Equal(t, 1, strings.Count(logs.String(), "liveness probe failed"))

		mode.Store(0)
		testclock.AdvanceBubble(300 * time.Millisecond)
		synctest.Wait()
		require.EqualValues(t, 6, pings.Load(), "keep-alives resume with the first passing round")
		require.Equal(t, 1, strings.Count(logs.String(), "keep-alives resumed"))

		cancel()
		<-done
	})
}

// TestWatchdogWithholdsASlowProbe: a round that passes but takes longer than a third of
// the interval sends no keep-alive: the process is too slow to be called alive.
func TestWatchdogWithholdsASlowProbe(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var pings atomic.Int64
		var delay atomic.Int64
		end := make(chan struct{})
		w := &Watchdog{
			Interval:      300 * time.Millisecond,
			KeepaliveFunc: func() error { pings.Add(1); return nil },
			ProbeFunc: func(context.Context) error { // slow code that ignores its deadline
				select {
				case <-time.After(time.Duration(delay.Load())):
				case <-end: // the round running when the test ends
				}
				return nil
			},
			Logger: slog.New(slog.DiscardHandler),
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); _ = w.Run(ctx) }()

		// Rounds start at 100, 300, 500, 700 and 900 ms (a tick during a round is
		// skipped), each ending 150 ms later.
		delay.Store(int64(150 * time.Millisecond))
		testclock.AdvanceBubble(1020 * time.Millisecond)
		synctest.Wait()
		require.Zero(t, pings.Load(), "every round took 150 ms of its 100")

		// Rounds at 1100 and 1200 ms end within 90 ms; the one at 1300 ms is running.
		delay.Store(int64(90 * time.Millisecond))
		testclock.AdvanceBubble(300 * time.Millisecond)
		synctest.Wait()
		require.EqualValues(t, 2, pings.Load(), "rounds within the limit send keep-alives again")
		cancel()
		<-done
		close(end)
	})
}

// TestWatchdogOffWithoutWatchdogSec: without WATCHDOG_USEC the notifier has no
// interval, and the watchdog returns at once without probing or sending anything.
func TestWatchdogOffWithoutWatchdogSec(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "")
	n, err := sdnotify.New()
	require.NoError(t, err)
	synctest.Test(t, func(t *testing.T) {
		probed := false
		w := NewWatchdog(n, func(context.Context) error { probed = true; return nil }, slog.New(slog.DiscardHandler))
		returned := make(chan error, 1)
		go func() { returned <- w.Run(t.Context()) }()
		synctest.Wait()
		select {
		case err := <-returned:
			require.NoError(t, err)
		default:
			t.Fatal("the watchdog must return at once without a watchdog")
		}
		require.False(t, probed)
	})
}

// memListener is an in-memory net.Listener: dial hands one end of a net.Pipe to
// Accept. Blocking in Accept or on a pipe is blocking in synctest's sense.
type memListener struct {
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

func newMemListener() *memListener {
	return &memListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}

func (l *memListener) Addr() net.Addr { return memAddr{} }

// dial connects to the listener; it blocks until Accept takes the connection.
func (l *memListener) dial() (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		client.Close()
		server.Close()
		return nil, net.ErrClosed
	}
}

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "mem" }

// TestLivenessProbe: the probe passes while the accept loop waits in Accept and the
// handler chain answers /health/live; it fails when the loop stays out of Accept for
// longer than the limit, the handler fails or a check of the daemon fails; a closed listener (draining) is not a
// stalled loop.
func TestLivenessProbe(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ln := newMemListener()
		aw := NewAcceptWatch(ln)
		var status atomic.Int32
		status.Store(http.StatusOK)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/health/live" {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			w.WriteHeader(int(status.Load()))
		})
		const maxStall = 50 * time.Millisecond
		var checkErr atomic.Pointer[error]
		probe := Probe{Accepts: []*AcceptWatch{aw}, MaxStall: maxStall, Handlers: []http.Handler{h}, Path: "/health/live",
			Checks: []func(context.Context) error{func(context.Context) error {
				if err := checkErr.Load(); err != nil {
					return *err
				}
				return nil
			}}}.Run
		ctx := t.Context()

		testclock.AdvanceBubble(2 * maxStall) // nobody has called Accept yet
		require.ErrorContains(t, probe(ctx), "HTTP accept loop has not called Accept for 100ms")

		// An accept loop that handles a connection before it calls Accept again;
		// unstall lets it go back.
		unstall := make(chan struct{})
		loopDone := make(chan struct{})
		go func() {
			defer close(loopDone)
			for {
				c, err := aw.Accept()
				if err != nil {
					return
				}
				c.Close()
				<-unstall
			}
		}()
		synctest.Wait() // the loop waits in Accept
		testclock.AdvanceBubble(2 * maxStall)
		require.NoError(t, probe(ctx), "an idle loop blocked in Accept is healthy")

		c, err := ln.dial()
		require.NoError(t, err)
		c.Close()
		synctest.Wait() // the loop is out of Accept, waiting on unstall
		testclock.AdvanceBubble(maxStall)
		require.NoError(t, probe(ctx), "out of Accept for no longer than the limit")
		testclock.AdvanceBubble(time.Millisecond)
		require.ErrorContains(t, probe(ctx), "HTTP accept loop has not called Accept for 51ms")
		unstall <- struct{}{}
		synctest.Wait()
		require.NoError(t, probe(ctx), "back in Accept")

		status.Store(http.StatusInternalServerError)
		require.ErrorContains(t, probe(ctx), "/health/live answered 500")
		status.Store(http.StatusOK)
		wedged := errors.New("wedged")
		checkErr.Store(&wedged)
		require.ErrorIs(t, probe(ctx), wedged, "the daemon's own checks count")
		checkErr.Store(nil)

		require.NoError(t, aw.Close())
		<-loopDone
		testclock.AdvanceBubble(2 * maxStall)
		require.NoError(t, probe(ctx), "a closed listener is draining, not stalled")
	})
}

// TestMultiListener serves two sockets through one listener, as a socket unit with
// two ListenStream= lines hands them over, and closes both.
func TestMultiListener(t *testing.T) {
	t.Parallel()
	a, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ml := NewMultiListener([]net.Listener{a, b})
	require.Equal(t, a.Addr(), ml.Addr())
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ml) }()
	for _, l := range []net.Listener{a, b} {
		resp, err := http.Get("http://" + l.Addr().String() + "/")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, "ok", string(body))
	}
	require.NoError(t, srv.Close())
	require.ErrorIs(t, <-served, http.ErrServerClosed)
	// Closed, asserted on the listeners themselves: dialing the address could reach
	// another test that was given the same ephemeral port in the meantime.
	for _, l := range []net.Listener{a, b} {
		_, err := l.Accept()
		require.ErrorIs(t, err, net.ErrClosed, "%s must be closed", l.Addr())
	}
}
