package appliance_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/daemon"
	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
	proxyconfig "github.com/queenmq/queen/internal/proxy/config"
	proxydaemon "github.com/queenmq/queen/internal/proxy/daemon"
	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// Both daemons are stopped the same way below: each runs in this process with its
// log on the process's stdout, which is a file that JOURNAL_STREAM names, as under
// systemd; a stop with a shutdown delay must go ready → not ready while still serving →
// drained → stopped, through the same stages, with every log line carrying the syslog
// priority of its level. Not parallel: they set the process environment and fd 1.

// stopDelay is the shutdown delay of both tests: long enough to see the 503.
const stopDelay = 2 * time.Second

// wantStages is the stop of a daemon that was ready, as both log it.
var wantStages = []string{"not ready", "shutdown delay", "stop accepting", "drain", "stop background components"}

// TestBrokerStopsInStages stops queen.
func TestBrokerStopsInStages(t *testing.T) {
	env := append(daemontest.PGEnv(t, pgtest.NewDBURL(t)), "HOST=127.0.0.1", "DB_POOL_SIZE=4",
		"FILE_BUFFER_DIR="+t.TempDir(), "QUEEN_SHUTDOWN_DELAY="+stopDelay.String())
	cfg, err := config.Load(env)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + ln.Addr().String()
	log := stopInStages(t, url, func(ctx context.Context, ready func()) error {
		return daemon.Run(ctx, cfg, daemon.Options{Listener: ln, ReadyFunc: func(string) { ready() }})
	})
	requireStages(t, log, append(wantStages, "flush and close the spool", "close the pool", "stop profiling and the key refresh"))
}

// TestProxyStopsInStages stops queen-proxy in front of a broker.
func TestProxyStopsInStages(t *testing.T) {
	broker := proxytest.StartBroker(t, daemontest.Options{})
	env := append(daemontest.PGEnv(t, pgtest.NewDBURL(t)), "QUEEN_PROXY_UPSTREAMS="+broker.URL,
		"QUEEN_PROXY_ADMIN_TOKEN="+proxytest.AdminToken, "QUEEN_PROXY_UPSTREAM_CHECK_INTERVAL=200ms",
		"QUEEN_PROXY_SHUTDOWN_DELAY="+stopDelay.String(), "QUEEN_PROXY_LOGIN=false", "DB_POOL_SIZE=4")
	cfg, err := proxyconfig.Load(env)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	adm, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	log := stopInStages(t, "http://"+ln.Addr().String(), func(ctx context.Context, ready func()) error {
		return proxydaemon.Run(ctx, cfg, proxydaemon.Options{Listener: ln, AdminListener: adm, ReadyFunc: ready,
			PasswordCost: proxytest.PasswordCost})
	})
	requireStages(t, log, append(wantStages, "close the pool"))
}

// stopInStages runs a daemon with run until it is ready (its /health/ready answers
// 200), stops it, requires /health/ready to answer 503 while /health still answers
// during the delay, and run to return nil; it returns what the daemon wrote to stdout.
func stopInStages(t *testing.T, url string, run func(ctx context.Context, ready func()) error) []byte {
	journal := journalStdout(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- run(ctx, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("the daemon returned before it was ready: %v", err)
	}
	status := func(path string) int {
		resp, err := http.Get(url + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Eventually(t, func() bool { return status("/health/ready") == http.StatusOK },
		daemontest.StartTimeout, 20*time.Millisecond, "ready")

	stopped := time.Now()
	cancel()
	require.Eventually(t, func() bool { return status("/health/ready") == http.StatusServiceUnavailable },
		stopDelay, 10*time.Millisecond, "not ready at once")
	require.Equal(t, http.StatusOK, status("/health/live"), "still serving during the delay")
	require.NoError(t, <-done, "a stop is a normal end")
	require.GreaterOrEqual(t, time.Since(stopped), stopDelay, "the listener stays open for the delay")
	require.Zero(t, status("/health/live"), "drained and closed")
	out, err := os.ReadFile(journal)
	require.NoError(t, err)
	return out
}

// journalStdout points fd 1 at a file and JOURNAL_STREAM at that file, as systemd
// does with StandardOutput=journal, until the test ends; it returns the file's path.
func journalStdout(t *testing.T) string {
	path := t.TempDir() + "/journal"
	f, err := os.Create(path)
	require.NoError(t, err)
	var st syscall.Stat_t
	require.NoError(t, syscall.Fstat(int(f.Fd()), &st))
	t.Setenv("JOURNAL_STREAM", fmt.Sprintf("%d:%d", st.Dev, st.Ino))
	saved, err := syscall.Dup(1)
	require.NoError(t, err)
	require.NoError(t, syscall.Dup3(int(f.Fd()), 1, 0))
	t.Cleanup(func() {
		_ = syscall.Dup3(saved, 1, 0)
		_ = syscall.Close(saved)
		f.Close()
		if t.Failed() { // what the daemon and the test wrote meanwhile
			b, _ := os.ReadFile(path)
			t.Logf("stdout while redirected:\n%s", b)
		}
	})
	return path
}

// requireStages requires every line of log to carry the priority of its level, the
// stop's stages to be want, in order, and "stopped" to be logged last.
func requireStages(t *testing.T, log []byte, want []string) {
	t.Helper()
	priority := map[string]string{"DEBUG": "<7>", "INFO": "<6>", "WARN": "<4>", "ERROR": "<3>"}
	var stages []string
	var last string
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		require.GreaterOrEqual(t, len(line), 3, "line %q", line)
		var rec struct{ Level, Msg, Stage string }
		require.NoError(t, json.Unmarshal(line[3:], &rec), "line %s", line)
		require.Equal(t, priority[rec.Level], string(line[:3]), "line %s", line)
		if rec.Msg == "shutdown stage" {
			stages = append(stages, rec.Stage)
		}
		last = rec.Msg
	}
	require.NoError(t, sc.Err())
	require.Equal(t, want, stages)
	require.Equal(t, "stopped", last)
	require.Contains(t, string(log), "<6>{", "info lines are prefixed")
}
