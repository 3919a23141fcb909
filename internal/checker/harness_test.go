package checker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/daemon"
	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/testlog"
)

// childEnv marks a re-executed test binary that must serve as a broker (runChild).
// Not QUEEN_*: config.Load rejects unknown QUEEN_ variables.
const childEnv = "CHECKER_BROKER_CHILD"

const (
	readyTimeout = 60 * time.Second       // a child broker's: schema apply included, under -race
	stopTimeout  = 30 * time.Second       // a child broker's
	downTime     = 300 * time.Millisecond // how long a restarted broker stays away
	tailBytes    = 4096                   // how much of a broker's log a failure shows
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(runChild())
	}
	os.Exit(m.Run())
}

// runChild serves a broker on the listener inherited as fd 3 until SIGTERM, or until
// its stdin closes (the test process is gone), and prints "READY addr" once ready.
func runChild() int {
	cfg, err := config.Load(os.Environ())
	if err != nil {
		fmt.Fprintln(os.Stderr, "checker child:", err)
		return 2
	}
	f := os.NewFile(3, "listener")
	ln, err := net.FileListener(f)
	_ = f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "checker child: inherited listener:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	err = daemon.Run(ctx, cfg, daemon.Options{Stdout: os.Stderr, Listener: ln,
		ReadyFunc: func(addr string) { fmt.Fprintf(os.Stdout, "READY %s\n", addr) }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "checker child:", err)
		return 1
	}
	return 0
}

// brokerEnv is the environment of a broker on dbURL.
func brokerEnv(t *testing.T, dbURL string) []string {
	t.Helper()
	return brokerSettings(daemontest.PGEnv(t, dbURL))
}

// brokerSettings is the environment of a broker on the database pgEnv (PG_*) names.
func brokerSettings(pgEnv []string) []string {
	return append([]string{"HOST=127.0.0.1", "LOG_LEVEL=warn", "DB_POOL_SIZE=12", "QUEEN_SHUTDOWN_TIMEOUT=5s",
		// Leases expire, acks release them and retry delays end without a wake-up:
		// re-check parked pops often rather than with the default 100 ms..1 s back-off.
		"POP_WAIT_INITIAL_INTERVAL_MS=25", "POP_WAIT_MAX_INTERVAL_MS=100"}, pgEnv...)
}

// cluster is brokers on one database: broker 0 runs daemon.Run in this process,
// brokers 1..n-1 each in a child process (this test binary again). An abrupt
// restart (Restart) kills a child (SIGKILL), or cancels the in-process daemon and
// cuts every open connection at once; a graceful one (RestartGraceful) sends a child
// SIGTERM, or cancels the in-process daemon and lets it drain, as systemd and
// Kubernetes stop a broker. Each broker keeps its address and its spool directory
// across restarts, as a broker behind a load balancer does.
type cluster struct {
	t    *testing.T
	env  []string
	urls []string
	in   inProcess
	ch   []*childProcess // broker i is ch[i-1]
}

// startCluster starts two brokers on dbURL: one in process, one in a child process.
func startCluster(t *testing.T, dbURL string) *cluster {
	t.Helper()
	return startClusterN(t, dbURL, 2)
}

// startClusterN starts n brokers on dbURL: one in process, n-1 in child processes.
func startClusterN(t *testing.T, dbURL string, n int) *cluster {
	t.Helper()
	return startClusterEnv(t, brokerEnv(t, dbURL), n)
}

// startClusterEnv starts n brokers with the environment env: one in process, n-1 in
// child processes, whose environment also holds childOnly.
func startClusterEnv(t *testing.T, env []string, n int, childOnly ...string) *cluster {
	t.Helper()
	require.GreaterOrEqual(t, n, 1, "a cluster has at least one broker")
	c := &cluster{t: t, env: env}
	// One spool directory per broker (kept across its restarts).
	c.in.t, c.in.opts = t, daemontest.Options{Env: c.env, NoDatabase: true, SpoolDir: t.TempDir()}
	require.NoError(t, c.in.start("127.0.0.1:0"))
	t.Cleanup(func() { require.NoError(t, c.in.stop(false), "in-process broker: %s", c.in.logs.Tail(tailBytes)) })
	c.urls = []string{"http://" + c.in.addr}
	for i := 1; i < n; i++ {
		ch := &childProcess{env: append(append([]string{childEnv + "=1", "PATH=" + os.Getenv("PATH"),
			"FILE_BUFFER_DIR=" + t.TempDir(), fmt.Sprintf("QUEEN_INSTANCE=%d", i)}, append(c.env, childOnly...)...),
			passThrough()...)}
		require.NoError(t, ch.start("127.0.0.1:0"))
		t.Cleanup(func() { require.NoError(t, ch.stop(), "child broker %d: %s", i, ch.stderr.Tail(tailBytes)) })
		c.ch = append(c.ch, ch)
		c.urls = append(c.urls, "http://"+ch.addr)
	}
	return c
}

// passThrough keeps the variables the race detector and the Go runtime read.
func passThrough() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GORACE=") || strings.HasPrefix(kv, "GOTRACEBACK=") || strings.HasPrefix(kv, "TMPDIR=") {
			out = append(out, kv)
		}
	}
	return out
}

func (c *cluster) URLs() []string { return c.urls }

// errorLines returns the first n lines at level ERROR that the brokers logged, for
// a failed run's report: those of answers other than 503 first (a fault's 503s, by
// the hundred, would hide the one that broke the run).
func (c *cluster) errorLines(n int) []string {
	var first, rest []string
	bufs := []*testlog.Buffer{&c.in.logs}
	for _, ch := range c.ch {
		bufs = append(bufs, &ch.stderr)
	}
	for i, b := range bufs {
		for line := range strings.Lines(b.String()) {
			if !strings.Contains(line, `"level":"ERROR"`) && !strings.Contains(line, "level=ERROR") {
				continue
			}
			entry := fmt.Sprintf("broker %d: %s", i, strings.TrimSpace(line))
			if strings.Contains(line, `"status":503`) || strings.Contains(line, "status=503") {
				rest = append(rest, entry)
			} else {
				first = append(first, entry)
			}
		}
	}
	out := append(first, rest...)
	return out[:min(n, len(out))]
}

func (c *cluster) Restart(ctx context.Context, i int) error { return c.restart(ctx, i, false) }

func (c *cluster) RestartGraceful(ctx context.Context, i int) error { return c.restart(ctx, i, true) }

func (c *cluster) restart(ctx context.Context, i int, graceful bool) error {
	if i < 0 || i >= len(c.urls) {
		return fmt.Errorf("no broker %d", i)
	}
	var err error
	switch {
	case i == 0:
		err = c.in.stop(!graceful)
	case graceful:
		err = c.ch[i-1].terminate()
	default:
		err = c.ch[i-1].kill()
	}
	if err != nil {
		return err
	}
	t := time.NewTimer(downTime)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	if i == 0 {
		return c.in.start(c.in.addr)
	}
	return c.ch[i-1].start(c.ch[i-1].addr)
}

// inProcess is a broker run by daemontest in the test process.
type inProcess struct {
	t    *testing.T
	opts daemontest.Options // the same at every start, but for the listener
	addr string
	srv  *daemontest.Server // nil while stopped
	ln   *trackingListener
	logs testlog.Buffer
}

func (b *inProcess) start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	b.ln = &trackingListener{Listener: ln, conns: make(map[net.Conn]struct{})}
	b.addr = ln.Addr().String()
	o := b.opts
	o.Listener, o.Logs = b.ln, &b.logs
	srv, err := daemontest.Launch(b.t, o)
	if err != nil {
		return fmt.Errorf("in-process broker: %w", err)
	}
	b.srv = srv
	return nil
}

// stop cancels the daemon; abrupt also cuts every connection it has accepted, so
// in-flight requests die with it.
func (b *inProcess) stop(abrupt bool) error {
	if b.srv == nil {
		return nil
	}
	srv := b.srv
	b.srv = nil
	srv.Cancel()
	if abrupt {
		b.ln.closeAll()
	}
	return srv.Stop()
}

// trackingListener remembers accepted connections so that closeAll can cut them.
type trackingListener struct {
	net.Listener
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = c.Close()
	} else {
		l.conns[c] = struct{}{}
	}
	return c, nil
}

func (l *trackingListener) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for c := range l.conns {
		_ = c.Close()
	}
}

// childProcess is a broker in a child process.
type childProcess struct {
	env    []string
	addr   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	done   chan error
	stderr testlog.Buffer
}

func (b *childProcess) start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	b.addr = ln.Addr().String()
	f, err := ln.(*net.TCPListener).File()
	_ = ln.Close() // the child serves the duplicate
	if err != nil {
		return err
	}
	defer f.Close()
	ready := &readyWriter{ch: make(chan struct{})}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = b.env
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stdout, cmd.Stderr = ready, &b.stderr
	if b.stdin, err = cmd.StdinPipe(); err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	b.cmd, b.done = cmd, make(chan error, 1)
	go func() { b.done <- cmd.Wait() }()
	select {
	case <-ready.ch:
		return nil
	case err := <-b.done:
		b.done <- err
		return fmt.Errorf("child broker exited before ready: %v: %s", err, b.stderr.Tail(tailBytes))
	case <-time.After(readyTimeout):
		return fmt.Errorf("child broker not ready within %s", readyTimeout)
	}
}

// kill ends the child with SIGKILL.
func (b *childProcess) kill() error {
	if err := b.cmd.Process.Kill(); err != nil {
		return err
	}
	return b.wait(true)
}

// terminate sends the child SIGTERM, as systemd and Kubernetes stop a broker: it
// drains and must exit 0.
func (b *childProcess) terminate() error {
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	if err := b.wait(false); err != nil {
		return fmt.Errorf("child broker after SIGTERM: %w: %s", err, b.stderr.Tail(tailBytes))
	}
	return nil
}

// stop closes the child's stdin, which makes it drain and exit; it must exit 0.
func (b *childProcess) stop() error {
	if b.cmd == nil {
		return nil
	}
	_ = b.stdin.Close()
	return b.wait(false)
}

func (b *childProcess) wait(killed bool) error {
	select {
	case err := <-b.done:
		b.cmd = nil
		if bytes.Contains(b.stderr.Bytes(), []byte("DATA RACE")) {
			return errors.New("the race detector reported a data race in the child broker")
		}
		if killed {
			return nil
		}
		return err
	case <-time.After(stopTimeout):
		_ = b.cmd.Process.Kill()
		return fmt.Errorf("child broker did not exit within %s", stopTimeout)
	}
}

// readyWriter closes ch when the child prints its READY line.
type readyWriter struct {
	mu   sync.Mutex
	buf  []byte
	ch   chan struct{}
	once sync.Once
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if bytes.Contains(w.buf, []byte("READY ")) && bytes.Contains(w.buf, []byte("\n")) {
		w.once.Do(func() { close(w.ch) })
	}
	return len(p), nil
}
