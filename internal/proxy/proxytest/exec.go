package proxytest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/proxy/config"
	"github.com/queenmq/queen/internal/testlog"
)

// buildTimeout bounds the go build of the queen-proxy binary, from an empty build
// cache on a slow machine included.
const buildTimeout = 10 * time.Minute

// execAttempts is how many times Exec starts a child whose port another process took
// between Exec picking it and the child binding it.
const execAttempts = 3

// built is the queen-proxy binary Exec runs: built once per test binary into a
// temporary directory that Main removes.
var built struct {
	main atomic.Bool // Main runs the tests
	once sync.Once
	dir  string // "" until the build has made it
	bin  string
	err  error
}

// Main runs the tests of a package that uses Exec, then removes the queen-proxy binary
// Exec built, if it did. Call it from the package's TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(proxytest.Main(m)) }
func Main(m *testing.M) int {
	built.main.Store(true)
	code := m.Run()
	// Do waits for a build still running and orders its writes before the read below;
	// once the tests are over, it only marks the build done.
	built.once.Do(func() {})
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	return code
}

// Exec runs a proxy as Start does, but as a child process of the queen-proxy binary
// (built once per test binary, with the race detector when the tests have it): the
// replicas of a test then share nothing but the proxy database and the brokers. It
// gives the child free loopback ports (HOST, PORT and QUEEN_PROXY_ADMIN_LISTEN, which
// o.Env cannot override) and Start's environment, sends its stdout and stderr where
// o.Logs says, waits until GET /health/ready answers 200 (so a backend must be up)
// and registers a cleanup that stops it as Stop does. The package's TestMain must call
// Main. o.Now must be nil, and the child hashes passwords at the proxy's cost, not
// PasswordCost.
func Exec(t testing.TB, o Options) *Proxy {
	t.Helper()
	if o.Now != nil {
		t.Fatal("proxytest: Exec cannot give a child process a clock (Options.Now)")
	}
	bin := proxyBinary(t)
	p := &Proxy{DBURL: o.DBURL}
	if p.DBURL == "" {
		p.DBURL = pgtest.NewDBURL(t)
	}
	var out io.Writer = o.Logs
	if o.Logs == nil {
		out = testlog.Writer(t) // before the stop's cleanup, so that it runs after it
	}
	for attempt := 1; ; attempt++ {
		port, err := freeAddr()
		if err != nil {
			t.Fatal(err)
		}
		admin, err := freeAddr()
		if err != nil {
			t.Fatal(err)
		}
		c, err := launch(t, bin, o, p.DBURL, out, port, admin)
		if err == nil {
			p.URL, p.AdminURL, p.stop = c.url, c.adminURL, c.stop
			t.Cleanup(func() {
				if err := p.Stop(); err != nil {
					t.Errorf("proxytest: stop: %v", err)
				}
			})
			return p
		}
		if !errors.Is(err, errPortTaken) || attempt == execAttempts {
			t.Fatalf("proxytest: %v", err)
		}
	}
}

// errPortTaken marks a child that exited as its port was taken.
var errPortTaken = errors.New("a port was taken")

// child is one queen-proxy process.
type child struct {
	url, adminURL string
	cmd           *exec.Cmd
	out           *testlog.Buffer // its output, for the error when it does not start
	exited        chan struct{}   // closed when Wait has returned; err is its result
	err           error
}

// launch starts a child listening on the loopback addresses port (public) and admin,
// and waits until it is ready. When it is not, it kills the child and returns why,
// with the end of its output.
func launch(t testing.TB, bin string, o Options, dbURL string, out io.Writer, port, admin string) (*child, error) {
	t.Helper()
	_, portNum, _ := net.SplitHostPort(port)
	env := append([]string{"HOST=127.0.0.1", "PORT=" + portNum, "QUEEN_PROXY_ADMIN_LISTEN=" + admin},
		proxyEnv(t, o, dbURL)...)
	if _, err := config.Load(env); err != nil {
		return nil, err
	}
	c := &child{url: "http://" + port, adminURL: "http://" + admin, out: &testlog.Buffer{}, exited: make(chan struct{})}
	c.cmd = exec.Command(bin, "serve")
	c.cmd.Env = firstWins(env)
	c.cmd.Stdout = io.MultiWriter(out, c.out)
	c.cmd.Stderr = c.cmd.Stdout
	c.cmd.SysProcAttr = childAttr()
	c.cmd.WaitDelay = 5 * time.Second
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { c.err = c.cmd.Wait(); close(c.exited) }()
	// Whatever happens to the test, the child does not outlive it; after a stop this
	// does nothing.
	t.Cleanup(c.kill)
	if err := c.waitReady(); err != nil {
		c.kill()
		if strings.Contains(c.out.String(), "address already in use") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return nil, fmt.Errorf("%w; the output ends:\n%s", err, c.out.Tail(4096))
	}
	return c, nil
}

// waitReady polls GET /health/ready until it answers 200, the child exits or
// startTimeout passes.
func (c *child) waitReady() error {
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-c.exited:
			return fmt.Errorf("queen-proxy (pid %d) exited before it was ready: %v", c.cmd.Process.Pid, c.err)
		default:
		}
		resp, err := client.Get(c.url + "/health/ready")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("queen-proxy (pid %d) is not ready within %s", c.cmd.Process.Pid, startTimeout)
		}
		wait(50 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for the child to exit, and returns an error unless it
// exits 0 within stopTimeout.
func (c *child) stop() error {
	pid := c.cmd.Process.Pid
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGTERM to queen-proxy (pid %d): %w", pid, err)
	}
	select {
	case <-c.exited:
	case <-time.After(stopTimeout):
		c.kill()
		return fmt.Errorf("queen-proxy (pid %d) did not exit within %s of SIGTERM", pid, stopTimeout)
	}
	if c.err != nil {
		return fmt.Errorf("queen-proxy (pid %d) after SIGTERM: %w", pid, c.err)
	}
	return nil
}

// kill kills the child unless it has exited, and waits for it.
func (c *child) kill() {
	select {
	case <-c.exited:
	default:
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

// proxyBinary builds cmd/queen-proxy on the first call and returns its path.
func proxyBinary(t testing.TB) string {
	t.Helper()
	if !built.main.Load() {
		t.Fatal("proxytest: Exec needs the package's TestMain to call proxytest.Main, which removes the binary it builds")
	}
	built.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			built.err = fmt.Errorf("the go tool must be on PATH: %w", err)
			return
		}
		if built.dir, err = os.MkdirTemp("", "queen-proxytest-"); err != nil {
			built.err = err
			return
		}
		bin := filepath.Join(built.dir, "queen-proxy")
		args := []string{"build", "-o", bin}
		if raceBuild {
			args = append(args, "-race")
		}
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, goTool, append(args, "github.com/queenmq/queen/cmd/queen-proxy")...)
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build queen-proxy: %w\n%s", err, out)
			return
		}
		built.bin = bin
	})
	if built.err != nil {
		t.Fatalf("proxytest: %v", built.err)
	}
	return built.bin
}

// freeAddr returns a loopback host:port that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// firstWins drops the later duplicates of a name from env: config.Load keeps the
// first, while a process's environment (exec.Cmd.Env) keeps the last.
func firstWins(env []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !seen[name] {
			seen[name] = true
			out = append(out, kv)
		}
	}
	return out
}
