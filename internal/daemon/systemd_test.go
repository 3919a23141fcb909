package daemon_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/daemon"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/sdnotify"
)

// notifySocket plays systemd's side of sd_notify for one (non-parallel) test: it
// points NOTIFY_SOCKET (and, with watchdog > 0, WATCHDOG_USEC/WATCHDOG_PID) at a
// datagram socket and records every message.
type notifySocket struct {
	mu   sync.Mutex
	msgs []string
}

func newNotifySocket(t *testing.T, watchdog time.Duration) *notifySocket {
	t.Helper()
	dir, err := os.MkdirTemp("", "notify") // short: unix socket paths are limited
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	t.Setenv("NOTIFY_SOCKET", path)
	if watchdog > 0 {
		t.Setenv("WATCHDOG_USEC", strconv.FormatInt(watchdog.Microseconds(), 10))
		t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	}
	ns := &notifySocket{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			ns.mu.Lock()
			ns.msgs = append(ns.msgs, string(buf[:n]))
			ns.mu.Unlock()
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	return ns
}

// since returns the messages received after the first n, and the new total.
func (ns *notifySocket) since(n int) ([]string, int) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return append([]string(nil), ns.msgs[n:]...), len(ns.msgs)
}

// waitFor waits until a message containing want arrives and returns the message and
// the number of messages seen up to and including it.
func (ns *notifySocket) waitFor(t *testing.T, want string, timeout time.Duration) (string, int) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msgs, _ := ns.since(0)
		for i, m := range msgs {
			if strings.Contains(m, want) {
				return m, i + 1
			}
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "missing notification", "no %q within %s; got %q", want, timeout, msgs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (ns *notifySocket) all() []string {
	m, _ := ns.since(0)
	return m
}

func countContaining(msgs []string, want string) int {
	n := 0
	for _, m := range msgs {
		if strings.Contains(m, want) {
			n++
		}
	}
	return n
}

// tcpProxy forwards 127.0.0.1:port to target once started; stop cuts every
// connection, which looks to the daemon like PostgreSQL going away.
type tcpProxy struct {
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func (p *tcpProxy) start(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
	t.Cleanup(p.stop)
}

func (p *tcpProxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestSystemdNotifyLifecycle runs the daemon as systemd would see it through
// NOTIFY_SOCKET: while PostgreSQL is unreachable it extends the start timeout with a
// "waiting for PostgreSQL" status and is not ready; once PostgreSQL answers and the
// schema is applied it sends READY=1; watchdog keep-alives flow, and keep flowing
// through a PostgreSQL outage (an outage is no reason to be killed); on cancel
// (SIGTERM) it sends STOPPING=1 and returns nil. Not parallel: it sets the process
// environment.
func TestSystemdNotifyLifecycle(t *testing.T) {
	const watchdog = 900 * time.Millisecond
	ns := newNotifySocket(t, watchdog)

	dbURL := pgtest.NewDBURL(t)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	proxy := &tcpProxy{target: u.Host}
	reserved, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	proxyAddr := reserved.Addr().String()
	require.NoError(t, reserved.Close()) // nothing listens there until proxy.start
	_, proxyPort, _ := net.SplitHostPort(proxyAddr)

	// The first occurrence of a variable wins: the proxy's address goes first.
	env := append([]string{"PG_HOST=127.0.0.1", "PG_PORT=" + proxyPort,
		"DB_CONNECTION_TIMEOUT=1000", "LOG_LEVEL=info", "DB_POOL_SIZE=4"}, pgEnv(t, dbURL)...)
	cfg, err := config.Load(env)
	require.NoError(t, err)
	notifier, err := sdnotify.New()
	require.NoError(t, err)
	require.Equal(t, watchdog, notifier.WatchdogInterval())

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var logs lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, cfg, daemon.Options{Stdout: &logs, Listener: ln, Notifier: notifier})
	}()

	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", logs.String())
		}
	})
	msg, _ := ns.waitFor(t, "EXTEND_TIMEOUT_USEC=", 20*time.Second)
	require.Contains(t, msg, "STATUS=waiting for PostgreSQL at 127.0.0.1 port "+proxyPort)
	require.NotContains(t, strings.Join(ns.all(), "\n"), "READY=1")

	// A push that arrives before readiness (under socket activation: the request that
	// started queen) is held until the schema is applied, then served.
	held := make(chan int, 1)
	go func() {
		resp, err := http.Post("http://"+ln.Addr().String()+"/api/v1/push", "application/json",
			strings.NewReader(`{"items":[{"queue":"held","payload":{"early":true}}]}`))
		if err != nil {
			held <- 0
			return
		}
		resp.Body.Close()
		held <- resp.StatusCode
	}()
	time.Sleep(200 * time.Millisecond)

	proxy.start(t, proxyAddr)
	msg, seen := ns.waitFor(t, "READY=1", 30*time.Second)
	require.Contains(t, msg, "STATUS=ready: serving on "+ln.Addr().String())
	require.Equal(t, http.StatusCreated, <-held, "the early push is served once ready")

	require.Eventually(t, func() bool {
		msgs, _ := ns.since(seen)
		return countContaining(msgs, "WATCHDOG=1") >= 2
	}, 5*time.Second, 20*time.Millisecond, "keep-alives after READY")

	proxy.stop()
	_, outageStart := ns.since(0)
	time.Sleep(3 * watchdog)
	during, _ := ns.since(outageStart)
	require.GreaterOrEqual(t, countContaining(during, "WATCHDOG=1"), 5,
		"keep-alives must go on while PostgreSQL is down; got %q", during)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(stopTimeout):
		t.Fatal("daemon did not stop")
	}
	msg, _ = ns.waitFor(t, "STOPPING=1", time.Second)
	require.Contains(t, msg, "STATUS=draining")
	require.Contains(t, logs.String(), `"msg":"systemd watchdog on"`)
}
