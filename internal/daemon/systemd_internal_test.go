package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/sdnotify"
)

// keepalives points NOTIFY_SOCKET and the watchdog at a datagram socket for one
// (non-parallel) test and returns the notifier and a counter of WATCHDOG=1 received.
func keepalives(t *testing.T, interval time.Duration) (*sdnotify.Notifier, *atomic.Int64) {
	t.Helper()
	dir, err := os.MkdirTemp("", "wd")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	t.Setenv("NOTIFY_SOCKET", path)
	t.Setenv("WATCHDOG_USEC", strconv.FormatInt(interval.Microseconds(), 10))
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	var pings atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 512)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			if string(buf[:n]) == "WATCHDOG=1" {
				pings.Add(1)
			}
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	n, err := sdnotify.New()
	require.NoError(t, err)
	return n, &pings
}

// TestWatchdogPingsOnlyWhileTheProbePasses: keep-alives flow while the probe passes,
// stop while it hangs (a deadlock) or fails, and resume when it passes again.
func TestWatchdogPingsOnlyWhileTheProbePasses(t *testing.T) {
	const interval = 300 * time.Millisecond // a keep-alive every 100 ms
	n, pings := keepalives(t, interval)

	var mode atomic.Int32 // 0 pass, 1 hang, 2 fail
	release := make(chan struct{})
	probe := func(ctx context.Context) error {
		switch mode.Load() {
		case 1:
			<-release // ignores ctx, like a goroutine stuck on a mutex
			return nil
		case 2:
			return errors.New("broken")
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		runWatchdog(ctx, n, probe, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	defer func() { cancel(); <-done }()

	require.Eventually(t, func() bool { return pings.Load() >= 3 }, 3*time.Second, 10*time.Millisecond)

	mode.Store(1)
	time.Sleep(2 * interval / 3) // let a probe start hanging
	before := pings.Load()
	time.Sleep(3 * interval)
	require.LessOrEqual(t, pings.Load()-before, int64(1), "a hung probe must stop the keep-alives")

	mode.Store(2)
	close(release)
	time.Sleep(interval / 3)
	before = pings.Load()
	time.Sleep(3 * interval)
	require.LessOrEqual(t, pings.Load()-before, int64(1), "a failing probe must stop the keep-alives")

	mode.Store(0)
	require.Eventually(t, func() bool { return pings.Load() >= before+3 }, 3*time.Second, 10*time.Millisecond)
}

func TestWatchdogOffWithoutWatchdogSec(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "")
	n, err := sdnotify.New()
	require.NoError(t, err)
	returned := make(chan struct{})
	go func() {
		runWatchdog(context.Background(), n, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(time.Second):
		t.Fatal("runWatchdog must return at once without a watchdog")
	}
}

// TestLivenessProbe: the probe passes while the accept loop waits in Accept and the
// handler chain answers /health/live; it fails when the loop stops calling Accept or
// the handler fails; a closed listener (draining) is not a stalled loop.
func TestLivenessProbe(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	aw := newAcceptWatch(ln)
	b := broker.New(broker.Config{}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
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
	probe := livenessProbe(aw, h, b, maxStall)
	ctx := context.Background()

	time.Sleep(2 * maxStall) // nobody has called Accept yet
	require.ErrorContains(t, probe(ctx), "accept loop")

	go func() {
		for {
			c, err := aw.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	require.Eventually(t, func() bool { return probe(ctx) == nil }, time.Second, 5*time.Millisecond)
	c, err := net.Dial("tcp", ln.Addr().String()) // one accept: back into Accept at once
	require.NoError(t, err)
	c.Close()
	time.Sleep(2 * maxStall)
	require.NoError(t, probe(ctx))

	status.Store(http.StatusInternalServerError)
	require.ErrorContains(t, probe(ctx), "/health/live answered 500")
	status.Store(http.StatusOK)

	require.NoError(t, aw.Close())
	time.Sleep(2 * maxStall)
	require.NoError(t, probe(ctx), "a closed listener is draining, not stalled")
}

// TestMultiListener serves two sockets through one listener, as a queen.socket with
// two ListenStream= lines hands them over, and closes both.
func TestMultiListener(t *testing.T) {
	t.Parallel()
	a, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ml := newMultiListener([]net.Listener{a, b})
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

// TestStartGate: /health passes a closed gate; other requests wait for Open, or get
// 503 unavailable when the start-up is abandoned.
func TestStartGate(t *testing.T) {
	t.Parallel()
	g := newStartGate()
	h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	serve := func(path string) chan int {
		done := make(chan int, 1)
		go func() {
			w := &probeWriter{header: make(http.Header)}
			h.ServeHTTP(w, &http.Request{Method: http.MethodGet, URL: &url.URL{Path: path}})
			done <- w.status
		}()
		return done
	}
	require.Equal(t, http.StatusNoContent, <-serve("/health/live"), "health routes are never held")

	first := serve("/api/v1/push")
	select {
	case s := <-first:
		t.Fatalf("served (%d) before the gate opened", s)
	case <-time.After(100 * time.Millisecond):
	}
	g.Open()
	require.Equal(t, http.StatusNoContent, <-first)
	g.Abort() // an open gate stays open
	require.Equal(t, http.StatusNoContent, <-serve("/api/v1/push"))

	g2 := newStartGate()
	h = g2.Wrap(http.NotFoundHandler())
	held := make(chan int, 1)
	go func() {
		w := &probeWriter{header: make(http.Header)}
		h.ServeHTTP(w, &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/api/v1/pop/queue/q"}})
		held <- w.status
	}()
	time.Sleep(50 * time.Millisecond)
	g2.Abort()
	require.Equal(t, http.StatusServiceUnavailable, <-held)
}
