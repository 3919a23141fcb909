package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// brokerProc is bin/queen running as a child process, so that its RSS and CPU time
// are its own and not the load generator's.
type brokerProc struct {
	cmd     *exec.Cmd
	url     string
	logPath string
	exited  chan struct{}
	// pprofAddr is the child's QUEEN_PPROF_ADDR, "" when it serves no profiles.
	pprofAddr string
}

// startBroker runs binary on a free loopback port against database db of the cluster
// described by conn, and waits until /health/ready answers 200. With pprof, the child
// also serves its profiling endpoints on another free loopback port.
func startBroker(ctx context.Context, binary string, environ []string, d *database, workDir string, pprof bool) (*brokerProc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	pprofAddr := ""
	if pprof {
		pp, err := freePort()
		if err != nil {
			return nil, err
		}
		pprofAddr = "127.0.0.1:" + strconv.Itoa(pp)
	}
	env := make([]string, 0, len(environ)+10)
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		// The broker warns about unknown QUEEN_* variables; the rest we set below.
		if strings.HasPrefix(name, "PG_") || name == "QUEEN_TEST_DATABASE_URL" || name == "HOST" || name == "PORT" ||
			name == "LOG_LEVEL" || name == "FILE_BUFFER_DIR" || name == "NOTIFY_SOCKET" || name == "LISTEN_FDS" ||
			name == "QUEEN_PPROF_ADDR" {
			continue
		}
		env = append(env, kv)
	}
	c := d.conn
	env = append(env,
		"PG_HOST="+c.Host, "PG_PORT="+strconv.Itoa(int(c.Port)), "PG_USER="+c.User, "PG_PASSWORD="+c.Password,
		"PG_DB="+d.name, "PG_USE_SSL="+strconv.FormatBool(c.TLSConfig != nil),
		// A bench DSN with sslmode=require (or prefer) encrypts without verifying; the
		// broker verifies unless told the same.
		"PG_SSL_REJECT_UNAUTHORIZED="+strconv.FormatBool(c.TLSConfig == nil || !c.TLSConfig.InsecureSkipVerify),
		"HOST=127.0.0.1", "PORT="+strconv.Itoa(port), "LOG_LEVEL=warn",
		"FILE_BUFFER_DIR="+filepath.Join(workDir, "spool"))
	if pprofAddr != "" {
		env = append(env, "QUEEN_PPROF_ADDR="+pprofAddr)
	}
	logPath := filepath.Join(workDir, "queen.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(binary)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (run make build first): %w", binary, err)
	}
	b := &brokerProc{cmd: cmd, url: "http://127.0.0.1:" + strconv.Itoa(port), logPath: logPath, exited: make(chan struct{}),
		pprofAddr: pprofAddr}
	go func() { _ = cmd.Wait(); close(b.exited) }()
	if err := b.waitReady(ctx, time.Minute); err != nil {
		b.stop()
		return nil, fmt.Errorf("%w\n%s", err, b.logTail())
	}
	return b, nil
}

func (b *brokerProc) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/health/ready", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-b.exited:
			return errors.New("queen exited before it was ready")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("queen not ready after %s", timeout)
		}
	}
}

// stop sends SIGTERM and waits for the exit (SIGKILL after 30 s).
func (b *brokerProc) stop() {
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(30 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.exited
	}
}

// cpu returns the CPU time (user + system) the broker has used so far; false when it
// cannot be read (no /proc, or the broker exited).
func (b *brokerProc) cpu() (time.Duration, bool) {
	d, _, ok := procTimes(b.cmd.Process.Pid, false)
	return d, ok
}

// peakRSS returns the broker's high-water resident set size (VmHWM) in bytes.
func (b *brokerProc) peakRSS() (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", b.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmHWM %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no VmHWM in /proc status")
}

// logTail returns the end of the broker's log, for error messages.
func (b *brokerProc) logTail() string {
	data, _ := os.ReadFile(b.logPath)
	if len(data) > 4096 {
		data = data[len(data)-4096:]
	}
	return string(data)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
