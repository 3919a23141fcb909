package daemon_test

import (
	"bufio"
	"bytes"
	"encoding/json"
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

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/sdnotify"
	"github.com/queenmq/queen/internal/testlog"
)

// notifySocket plays systemd's side of sd_notify for one (non-parallel) test: it
// points NOTIFY_SOCKET (and, with watchdog > 0, WATCHDOG_USEC/WATCHDOG_PID) at a
// datagram socket and records every message.
type notifySocket struct {
	mu   sync.Mutex
	msgs []string
	// arrived gets a token after each message, for waitFor; it holds one at most.
	arrived chan struct{}
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
	ns := &notifySocket{arrived: make(chan struct{}, 1)}
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
			select {
			case ns.arrived <- struct{}{}:
			default:
			}
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
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		msgs, _ := ns.since(0)
		for i, m := range msgs {
			if strings.Contains(m, want) {
				return m, i + 1
			}
		}
		select {
		case <-ns.arrived:
		case <-timer.C:
			require.FailNow(t, "missing notification", "no %q within %s; got %q", want, timeout, msgs)
		}
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

// readListener closes read once the server has read the first bytes from any
// connection it accepted: a request has reached the daemon, not merely the socket.
type readListener struct {
	net.Listener
	once sync.Once
	read chan struct{}
}

func (l *readListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &readConn{Conn: c, l: l}, nil
}

type readConn struct {
	net.Conn
	l *readListener
}

func (c *readConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.l.once.Do(func() { close(c.l.read) })
	}
	return n, err
}

// shutdownStages returns the "stage" of every "shutdown stage" line of a JSON log, in
// order, and the message of the log's last line.
func shutdownStages(t *testing.T, log []byte) (stages []string, last string) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var rec struct{ Msg, Stage string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), "log line %s", sc.Bytes())
		if rec.Msg == "shutdown stage" {
			stages = append(stages, rec.Stage)
		}
		last = rec.Msg
	}
	require.NoError(t, sc.Err())
	return stages, last
}

// TestSystemdNotifyLifecycle runs the daemon as systemd would see it through
// NOTIFY_SOCKET: while PostgreSQL is unreachable it extends the start timeout with a
// "waiting for PostgreSQL" status and is not ready; once PostgreSQL answers and the
// schema is applied it sends READY=1; watchdog keep-alives flow, and keep flowing
// through a PostgreSQL outage (an outage is no reason to be killed); on cancel
// (SIGTERM) it sends STOPPING=1, stops in its stages, in order, and returns nil. Not
// parallel: it sets the process environment.
func TestSystemdNotifyLifecycle(t *testing.T) {
	const watchdog = 900 * time.Millisecond // a keep-alive every 300 ms
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

	notifier, err := sdnotify.New()
	require.NoError(t, err)
	require.Equal(t, watchdog, notifier.WatchdogInterval())
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := &readListener{Listener: inner, read: make(chan struct{})}
	var logs testlog.Buffer
	srv := daemontest.Start(t, daemontest.Options{
		// The proxy's address overrides the database's own.
		Env: []string{"PG_HOST=127.0.0.1", "PG_PORT=" + proxyPort,
			"DB_CONNECTION_TIMEOUT=1000", "LOG_LEVEL=info", "DB_POOL_SIZE=4"},
		DBURL: dbURL, Logs: &logs, Listener: ln, Notifier: notifier, NoWait: true,
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", logs.String())
		}
	})

	msg, _ := ns.waitFor(t, "EXTEND_TIMEOUT_USEC=", 20*time.Second)
	require.Contains(t, msg, "STATUS=waiting for PostgreSQL at 127.0.0.1 port "+proxyPort)
	require.NotContains(t, strings.Join(ns.all(), "\n"), "READY=1")

	// A push that arrives before readiness (under socket activation: the request that
	// started queen) is served once PostgreSQL is found down: it goes to the spool.
	pushed := make(chan int, 1)
	go func() {
		resp, err := http.Post(srv.URL+"/api/v1/push", "application/json",
			strings.NewReader(`{"items":[{"queue":"held","payload":{"early":true}}]}`))
		if err != nil {
			pushed <- 0
			return
		}
		resp.Body.Close()
		pushed <- resp.StatusCode
	}()
	select {
	case <-ln.read:
	case <-time.After(10 * time.Second):
		t.Fatal("the early push has not reached the daemon")
	}

	proxy.start(t, proxyAddr)
	msg, seen := ns.waitFor(t, "READY=1", 30*time.Second)
	require.Contains(t, msg, "STATUS=ready: serving on "+srv.Addr)
	require.Equal(t, http.StatusCreated, <-pushed, "the early push is served")

	require.Eventually(t, func() bool {
		msgs, _ := ns.since(seen)
		return countContaining(msgs, "WATCHDOG=1") >= 2
	}, 5*time.Second, 20*time.Millisecond, "keep-alives after READY")

	// The outage is in effect once the API says PostgreSQL is unavailable; keep-alives
	// go on regardless.
	proxy.stop()
	require.Eventually(t, func() bool {
		resp, err := http.Get(srv.URL + "/api/v1/resources/queues")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	}, 20*time.Second, 50*time.Millisecond, "the API reports PostgreSQL unavailable")
	_, outageSeen := ns.since(0)
	require.Eventually(t, func() bool {
		during, _ := ns.since(outageSeen)
		return countContaining(during, "WATCHDOG=1") >= 5
	}, 3*watchdog, 20*time.Millisecond, "keep-alives must go on while PostgreSQL is down")

	require.NoError(t, srv.Stop())
	msg, _ = ns.waitFor(t, "STOPPING=1", time.Second)
	require.Contains(t, msg, "STATUS=draining")
	require.Contains(t, logs.String(), `"msg":"systemd watchdog on"`)
	stages, last := shutdownStages(t, logs.Bytes())
	require.Equal(t, []string{"not ready", "shutdown delay", "stop accepting", "drain",
		"stop background components", "flush and close the spool", "close the pool",
		"stop profiling and the key refresh"}, stages)
	require.Equal(t, "stopped", last)
}
