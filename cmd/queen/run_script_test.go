package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/testlog"
)

// TestBinaryServeRefusesInvalidBoolean runs the real binary the way systemd does (no
// flag, or the serve command) with a misspelt boolean: it must exit 78 (EX_CONFIG,
// which the unit's RestartPreventExitStatus= keeps from restarting) before touching
// the network, and say which variable and value are wrong. TestBinary covers the same
// for -check-config.
func TestBinaryServeRefusesInvalidBoolean(t *testing.T) {
	t.Parallel()

	bin := filepath.Join(t.TempDir(), "queen")
	goBuild(t, moduleRoot(t), bin)

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"NoArguments", nil},
		{"ServeCommand", []string{"serve"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, tc.args...)
			// PG_HOST points at a port nobody serves: were the configuration accepted,
			// queen would wait for PostgreSQL instead of exiting.
			cmd.Env = []string{"PG_USE_SSL=ture", "PG_HOST=127.0.0.1", "PG_PORT=1", "PORT=" + freePort(t)}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.WaitDelay = 5 * time.Second
			require.NoError(t, cmd.Start())
			timer := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
			defer timer.Stop()

			err := cmd.Wait()
			var exitErr *exec.ExitError
			require.ErrorAs(t, err, &exitErr, "stdout:\n%s\nstderr:\n%s", &stdout, &stderr)
			require.Equal(t, exitConfig, exitErr.ExitCode(), "stderr:\n%s", &stderr)
			require.Contains(t, stderr.String(), "PG_USE_SSL")
			require.Contains(t, stderr.String(), "ture")
			require.Empty(t, stdout.String(), "nothing was started, so nothing was logged")
		})
	}
}

// TestMakeRunServesQuickstart runs what `make run` runs (bin/queen through
// scripts/run.sh) with no PG_* variables, so that the script starts its own throwaway
// PostgreSQL. It follows the README quickstart with the equivalents of its two curl
// commands, stops the script as Ctrl-C would (SIGINT to its process group), and
// requires that it exits and leaves neither a process nor a directory behind.
func TestMakeRunServesQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster through scripts/run.sh")
	}
	t.Parallel()

	root := moduleRoot(t)
	goBuild(t, root, filepath.Join(root, "bin", "queen")) // where run.sh looks for it

	// run.sh makes its cluster directory under $TMPDIR (scripts/lib/pg.sh pg_start,
	// queen-pgtest.XXXXXXXX). Give it a directory of our own, so that what it leaves
	// behind can be told from other clusters. As root the server runs as postgres,
	// which must be able to enter it.
	tmp, err := os.MkdirTemp("", "queen-makerun-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(tmp, 0o755))

	port := freePort(t)
	cmd := exec.Command(filepath.Join(root, "scripts", "run.sh"))
	cmd.Dir = root
	cmd.Env = append(scrubbedEnv(os.Environ()), "PORT="+port, "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	output := &testlog.Buffer{}
	cmd.Stdout, cmd.Stderr = output, output
	cmd.WaitDelay = 10 * time.Second
	require.NoError(t, cmd.Start())
	pgid := cmd.Process.Pid

	var exited atomic.Bool
	waitErr := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		exited.Store(true)
		waitErr <- err
	}()
	t.Cleanup(func() {
		if !exited.Load() {
			// The test failed with the script running: stop it like an operator would,
			// then hard.
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			select {
			case err := <-waitErr:
				t.Logf("make run stopped: %v", err)
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				t.Logf("make run killed: %v", <-waitErr)
			}
		}
		stopLeftoverClusters(t, tmp)
		require.NoError(t, os.RemoveAll(tmp))
		if t.Failed() {
			t.Logf("scripts/run.sh output:\n%s", output)
		}
	})

	base := "http://localhost:" + port
	hc := &http.Client{Timeout: 10 * time.Second}
	t.Cleanup(hc.CloseIdleConnections)
	require.Eventually(t, func() bool {
		if exited.Load() {
			return true
		}
		resp, err := hc.Get(base + "/health/ready")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 3*time.Minute, 200*time.Millisecond, "GET /health/ready never answered 200")
	require.False(t, exited.Load(), "scripts/run.sh exited before the broker was ready:\n%s", output)

	// curl -s -X POST localhost:$PORT/api/v1/push -H 'Content-Type: application/json' -d '…'
	resp, err := hc.Post(base+"/api/v1/push", "application/json",
		strings.NewReader(`{"items":[{"queue":"demo","payload":{"hello":"world"}}]}`))
	require.NoError(t, err)
	body := readBody(t, resp)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", body)
	var pushed []api.PushResult
	require.NoError(t, json.Unmarshal(body, &pushed), "%s", body)
	require.Len(t, pushed, 1)
	require.Equal(t, api.PushStatusQueued, pushed[0].Status)

	// curl -s 'localhost:$PORT/api/v1/pop/queue/demo?autoAck=true'
	resp, err = hc.Get(base + "/api/v1/pop/queue/demo?autoAck=true")
	require.NoError(t, err)
	body = readBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var popped api.PopResponse
	require.NoError(t, json.Unmarshal(body, &popped), "%s", body)
	require.Len(t, popped.Messages, 1)
	require.JSONEq(t, `{"hello":"world"}`, string(popped.Messages[0].Data))

	// "Pop again and you get 204 No Content."
	resp, err = hc.Get(base + "/api/v1/pop/queue/demo?autoAck=true")
	require.NoError(t, err)
	body = readBody(t, resp)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
	hc.CloseIdleConnections()

	// The cluster lives in our TMPDIR, and its server runs out of it.
	clusters, err := filepath.Glob(filepath.Join(tmp, "queen-pgtest.*"))
	require.NoError(t, err)
	require.Len(t, clusters, 1, "run.sh made one cluster directory under TMPDIR=%s", tmp)
	servers, err := processesMatching(func(p proc) bool { return strings.Contains(p.cmdline, clusters[0]) })
	require.NoError(t, err)
	require.NotEmpty(t, servers, "a PostgreSQL server runs out of %s", clusters[0])

	// Ctrl-C.
	require.NoError(t, syscall.Kill(-pgid, syscall.SIGINT))
	select {
	case err = <-waitErr:
	case <-time.After(time.Minute):
		require.FailNow(t, "scripts/run.sh did not exit within a minute of SIGINT", "%s", output)
	}
	exitErr := err

	var left []proc
	require.Eventually(t, func() bool {
		left, err = processesMatching(func(p proc) bool {
			return p.pgrp == pgid || strings.Contains(p.cmdline, tmp)
		})
		return err == nil && len(left) == 0
	}, 30*time.Second, 100*time.Millisecond, "processes of run.sh or of its cluster remain")
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, entries, "run.sh removed its cluster directory")
	_, err = net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
	require.Error(t, err, "nothing listens on PORT any more")

	// Ctrl-C reaches queen twice: from the terminal (the process group) and forwarded
	// by run.sh. A graceful stop still exits 0; 130 means queen was killed by the
	// second SIGINT in the middle of its drain.
	require.NoError(t, exitErr, "run.sh exits with queen's status, 0 after a graceful stop:\n%s", output)
	require.Contains(t, output.String(), `"msg":"stopped"`, "queen finished its drain")
}

// moduleRoot returns the repository root (two directories up from cmd/queen).
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "go.mod"))
	return root
}

// goBuild builds ./cmd/queen of root into out.
func goBuild(t *testing.T, root, out string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go tool must be on PATH")
	build := exec.Command(goTool, "build", "-trimpath", "-o", out, "./cmd/queen")
	build.Dir = root
	combined, err := build.CombinedOutput()
	require.NoError(t, err, "go build:\n%s", combined)
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	require.NoError(t, ln.Close())
	return port
}

// scrubbedEnv drops what would make run.sh use an existing database (any PG_*
// variable, libpq's PG* and the test harness's) or change queen's configuration
// (QUEEN_*, HOST, PORT, TMPDIR, credentials).
func scrubbedEnv(environ []string) []string {
	drop := map[string]bool{
		"PGHOST": true, "PGPORT": true, "PGUSER": true, "PGPASSWORD": true, "PGDATABASE": true,
		"PGTEST_DIR": true, "HOST": true, "PORT": true, "TMPDIR": true, "FILE_BUFFER_DIR": true,
		"CREDENTIALS_DIRECTORY": true,
	}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if drop[name] || strings.HasPrefix(name, "PG_") || strings.HasPrefix(name, "QUEEN_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func readBody(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return body
}

// proc is a process as /proc shows it.
type proc struct {
	pid, pgrp int
	cmdline   string // arguments joined with spaces
}

// processesMatching lists the live processes for which keep is true (Linux /proc).
// It fails when /proc lists no process at all, so that "none left" cannot pass
// vacuously.
func processesMatching(keep func(proc) bool) ([]proc, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, errors.New("/proc lists no process")
	}
	var out []proc
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 3 || fields[0] == "Z" {
			continue // zombies are already dead
		}
		pgrp, _ := strconv.Atoi(fields[2])
		raw, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		p := proc{pid: pid, pgrp: pgrp, cmdline: strings.TrimSpace(strings.ReplaceAll(string(raw), "\x00", " "))}
		if keep(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// stopLeftoverClusters stops PostgreSQL servers still running out of dir: only after a
// failure, when run.sh could not clean up. Their postmaster.pid names them.
func stopLeftoverClusters(t *testing.T, dir string) {
	t.Helper()
	pidFiles, _ := filepath.Glob(filepath.Join(dir, "queen-pgtest.*", "data", "postmaster.pid"))
	for _, f := range pidFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		line, _, _ := strings.Cut(string(data), "\n")
		pid, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil || pid <= 1 {
			continue
		}
		t.Errorf("PostgreSQL (pid %d) still running out of %s; stopping it", pid, filepath.Dir(f))
		_ = syscall.Kill(pid, syscall.SIGQUIT) // immediate shutdown
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for ctx.Err() == nil && syscall.Kill(pid, 0) == nil {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		cancel()
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
