package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/testlog"
)

// brokerProcess is the real binary serving a database of its own on 127.0.0.1.
type brokerProcess struct {
	cmd    *exec.Cmd
	base   string
	stdout *testlog.Buffer // the JSON log
	stderr *testlog.Buffer
	done   chan error // receives cmd.Wait's result once
}

// startBinary runs bin serve with the test database's PG_* variables, a spool
// directory and a free port, plus env, and waits until /health/ready answers 200. The
// process is killed when the test ends if it is still running.
func startBinary(t *testing.T, bin string, env ...string) *brokerProcess {
	t.Helper()
	port := freePort(t)
	environ := append(daemontest.PGEnv(t, pgtest.NewDBURL(t)),
		"HOST=127.0.0.1", "PORT="+port, "DB_POOL_SIZE=4", "FILE_BUFFER_DIR="+t.TempDir())
	p := &brokerProcess{
		cmd:    exec.Command(bin, "serve"),
		base:   "http://127.0.0.1:" + port,
		stdout: &testlog.Buffer{}, stderr: &testlog.Buffer{},
		done: make(chan error, 1),
	}
	p.cmd.Env = append(environ, env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	require.NoError(t, p.cmd.Start())
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			t.Logf("queen killed at cleanup: %v", <-p.done)
		}
		if t.Failed() {
			t.Logf("queen stdout:\n%s\nstderr:\n%s", p.stdout, p.stderr)
		}
	})
	require.Eventually(t, func() bool { return p.readyStatus() == http.StatusOK },
		30*time.Second, 50*time.Millisecond, "GET /health/ready never answered 200")
	return p
}

// readyStatus is the status of GET /health/ready, 0 when nothing answers.
func (p *brokerProcess) readyStatus() int {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(p.base + "/health/ready")
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// waitForLog waits until the log holds n lines containing want.
func (p *brokerProcess) waitForLog(t *testing.T, want string, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Count(p.stdout.String(), want) >= n },
		15*time.Second, 20*time.Millisecond, "the log never held %d × %q", n, want)
}

// signalAndWait sends sig and requires the process to exit 0 within 30 s.
func (p *brokerProcess) signalAndWait(t *testing.T, sig os.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
	select {
	case err := <-p.done:
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			t.Fatalf("exit status %d after %v; stderr:\n%s", exitErr.ExitCode(), sig, p.stderr)
		}
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("queen did not exit within 30 s of %v", sig)
	}
}

// logRecords decodes the JSON log lines whose msg is msg.
func (p *brokerProcess) logRecords(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(p.stdout.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "log line: %s", line)
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// TestBinarySignals sends the real binary, serving a real database, the signals an
// operator and systemd send: SIGHUP (systemctl reload) re-reads the env file named by
// QUEEN_ENV_FILES, applies LOG_LEVEL and keeps serving; SIGTERM (systemctl stop) and
// SIGINT (Ctrl-C) drain and exit 0.
func TestBinarySignals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the broker against PostgreSQL")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "queen")
	goBuild(t, moduleRoot(t), bin)

	t.Run("HUPThenTERM", func(t *testing.T) {
		t.Parallel()
		envFile := filepath.Join(t.TempDir(), "queen.env")
		require.NoError(t, os.WriteFile(envFile, []byte("LOG_LEVEL=debug\nDEFAULT_BATCH_SIZE=1\n"), 0o644))
		// As systemd would: the file's variables, and the unit's QUEEN_ENV_FILES.
		p := startBinary(t, bin, "LOG_LEVEL=debug", "DEFAULT_BATCH_SIZE=1", "QUEEN_ENV_FILES="+envFile)
		const access = `"msg":"http request","component":"httpapi","method":"GET","route":"/health/ready"`
		p.waitForLog(t, access, 1) // debug: the readiness polls are logged

		require.NoError(t, os.WriteFile(envFile, []byte("LOG_LEVEL=info\nDEFAULT_BATCH_SIZE=5\n"), 0o644))
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
		p.waitForLog(t, `"msg":"reloaded: log_level debug→info"`, 1)
		require.Contains(t, p.stdout.String(), `"msg":"received SIGHUP: re-reading the env files"`)
		require.Contains(t, p.stdout.String(), `"msg":"changed in `+envFile+` but needs a restart: DEFAULT_BATCH_SIZE"`)
		accessLines := strings.Count(p.stdout.String(), access) // all logged before the reload line
		require.Nil(t, p.cmd.ProcessState, "SIGHUP does not stop the broker")
		require.Equal(t, http.StatusOK, p.readyStatus(), "the broker serves after SIGHUP")

		// A second SIGHUP, once logged, proves that the request above was logged or
		// not: the log is one ordered stream.
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
		p.waitForLog(t, `"msg":"reloaded: nothing to apply"`, 1)
		require.Equal(t, accessLines, strings.Count(p.stdout.String(), access), "no debug line at LOG_LEVEL=info")
		require.Equal(t, http.StatusOK, p.readyStatus())

		p.signalAndWait(t, syscall.SIGTERM)
		shutdown := p.logRecords(t, "shutting down")
		require.Len(t, shutdown, 1)
		require.Equal(t, "received terminated", shutdown[0]["reason"])
		require.Len(t, p.logRecords(t, "stopped"), 1, "the drain ran to its end")
	})
	t.Run("INT", func(t *testing.T) {
		t.Parallel()
		p := startBinary(t, bin, "LOG_LEVEL=info")
		p.signalAndWait(t, syscall.SIGINT)
		shutdown := p.logRecords(t, "shutting down")
		require.Len(t, shutdown, 1)
		require.Equal(t, "received interrupt", shutdown[0]["reason"])
		require.Len(t, p.logRecords(t, "stopped"), 1, "the drain ran to its end")
	})
}

// TestBinaryStartsBesideKubernetesServiceLinks runs the real binary with the
// variables Kubernetes gives every pod for a Service named queen, and a misspelt
// setting: it starts and serves, warns once about the typo (with a hint) and never
// about the service links; -check-config fails, naming the typo only.
func TestBinaryStartsBesideKubernetesServiceLinks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the broker against PostgreSQL")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "queen")
	goBuild(t, moduleRoot(t), bin)
	env := []string{"QUEEN_PORT=tcp://10.0.0.1:6632", "QUEEN_SERVICE_HOST=10.0.0.1", "QUEEN_SHUTDOWN_TIMOUT=1s"}

	p := startBinary(t, bin, env...)
	var warnings []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(p.stdout.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "log line: %s", line)
		if rec["level"] == "WARN" && strings.Contains(line, "QUEEN_SHUTDOWN_TIMOUT") {
			warnings = append(warnings, rec)
		}
	}
	require.Len(t, warnings, 1, "one warning for the typo")
	require.Equal(t, "QUEEN_SHUTDOWN_TIMOUT", warnings[0]["variable"])
	require.Equal(t, "QUEEN_SHUTDOWN_TIMEOUT", warnings[0]["did_you_mean"])
	require.NotContains(t, p.stdout.String()+p.stderr.String(), "QUEEN_PORT", "nothing about the service links")
	require.NotContains(t, p.stdout.String()+p.stderr.String(), "QUEEN_SERVICE_HOST")
	p.signalAndWait(t, syscall.SIGTERM)

	cmd := exec.Command(bin, "-check-config")
	cmd.Env = env
	var stdout, stderr testlog.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr)
	require.Equal(t, exitConfig, exitErr.ExitCode(), "stderr:\n%s", &stderr)
	require.Equal(t, "config: QUEEN_SHUTDOWN_TIMOUT: unknown variable, ignored; did you mean QUEEN_SHUTDOWN_TIMEOUT?\n"+
		"queen: every value is valid and the daemon would start, but it would warn about the 1 unknown "+
		"QUEEN_* or OTEL_* variable(s) above and ignore them; fix or remove them\n", stderr.String())
	require.NotContains(t, stdout.String(), "configuration OK")

	// Without the typo, the check passes.
	cmd = exec.Command(bin, "-check-config")
	cmd.Env = env[:2]
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "configuration OK\n", string(out))
}
