package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Outage helpers. CutOff makes one test database unreachable
// without touching the shared server; Cluster starts a private server that a test
// may stop and start (pg_ctl stop -m immediate) as often as it likes.

// CutOff makes the database of dbURL (one made by NewDB or NewDBURL) refuse new
// connections and terminates the open ones: to its clients PostgreSQL is down. The
// returned restore lets connections in again; it is also run when the test ends.
func CutOff(t testing.TB, dbURL string) (restore func()) {
	t.Helper()
	return alterDatabase(t, dbURL, "cut off", "WITH ALLOW_CONNECTIONS false", "WITH ALLOW_CONNECTIONS true")
}

// ReadOnly makes the database of dbURL behave as a standby does to its clients during
// a failover: its open connections are terminated, and every new one runs read-only
// (default_transaction_read_only), so each writing statement fails with SQLSTATE 25006
// while connections and reads succeed. The returned restore makes it writable again
// (for new connections); it is also run when the test ends.
func ReadOnly(t testing.TB, dbURL string) (restore func()) {
	t.Helper()
	return alterDatabase(t, dbURL, "make read-only", "SET default_transaction_read_only = on",
		"RESET default_transaction_read_only")
}

// alterDatabase runs ALTER DATABASE ... change on the database of dbURL, terminates
// its sessions, and returns a restore that runs ALTER DATABASE ... undo once (also
// when the test ends).
func alterDatabase(t testing.TB, dbURL, what, change, undo string) (restore func()) {
	t.Helper()
	admin, _ := setup(t, URL(t))
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	ctx, cancel := context.WithTimeout(t.Context(), setupTimeout)
	defer cancel()
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+ident(name)+" "+change); err != nil {
		t.Fatalf("pgtest: %s %s: %v", what, name, err)
	}
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = $1 AND pid <> pg_backend_pid()`, name); err != nil {
		t.Fatalf("pgtest: terminate the connections of %s: %v", name, err)
	}
	restored := false
	restore = func() {
		if restored {
			return
		}
		restored = true
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), cleanupTimeout)
		defer cancel()
		if _, err := admin.Exec(ctx, "ALTER DATABASE "+ident(name)+" "+undo); err != nil {
			t.Errorf("pgtest: undo %s %s: %v", what, name, err)
		}
	}
	t.Cleanup(restore)
	return restore
}

// Cluster is a private PostgreSQL server for one test: initdb into a temporary
// directory, started on a free port of 127.0.0.1 (about 3 s). As root the server
// runs as the user postgres, as initdb and postgres refuse root.
type Cluster struct {
	t      testing.TB
	bindir string
	dir    string
	port   int
	asUser string // run server commands through runuser as this user ("" = directly)
	frozen []int  // the processes Freeze stopped, postmaster first
}

// StartCluster creates and starts a private cluster, stopped and removed when the
// test ends. It skips under -short, like URL.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("pgtest: a private PostgreSQL cluster is not started under -short")
	}
	bindir, err := findBindir()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	c := &Cluster{t: t, bindir: bindir}
	parent := os.TempDir()
	if os.Geteuid() == 0 {
		c.asUser = "postgres"
		if _, err := user.Lookup(c.asUser); err != nil {
			t.Fatalf("pgtest: running as root but user postgres does not exist (initdb refuses root): %v", err)
		}
		parent = "/tmp" // reachable by postgres whatever TMPDIR is
	}
	c.dir, err = os.MkdirTemp(parent, "queen-pgcluster.")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		_ = c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "-t", "30", "-s", "stop")
		_ = os.RemoveAll(c.dir)
	})
	if c.asUser != "" {
		if out, err := exec.Command("chown", c.asUser+":", c.dir).CombinedOutput(); err != nil {
			t.Fatalf("pgtest: chown %s: %v: %s", c.dir, err, out)
		}
	}
	if err := c.run("initdb", "--no-sync", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "-D", c.data()); err != nil {
		t.Fatalf("pgtest: initdb: %v", err)
	}
	c.port = freePort(t)
	c.Start()
	return c
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// URL is the cluster's postgres database as the postgres user.
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// Fork makes a second primary with the cluster's history, as a standby promoted while
// its former primary comes back leaves two: it stops the server cleanly, copies its
// data directory into a new cluster, starts the copy as a standby of no one and
// promotes it (onto the next timeline), then starts the server again. The copy is
// stopped and removed when the test ends.
func (c *Cluster) Fork() *Cluster {
	c.t.Helper()
	if err := c.run("pg_ctl", "-D", c.data(), "-m", "fast", "-w", "-t", "60", "-s", "stop"); err != nil {
		c.t.Fatalf("pgtest: pg_ctl stop: %v", err)
	}
	f := &Cluster{t: c.t, bindir: c.bindir, asUser: c.asUser}
	var err error
	if f.dir, err = os.MkdirTemp(filepath.Dir(c.dir), "queen-pgcluster."); err != nil {
		c.t.Fatalf("pgtest: %v", err)
	}
	c.t.Cleanup(func() {
		_ = f.run("pg_ctl", "-D", f.data(), "-m", "immediate", "-w", "-t", "30", "-s", "stop")
		_ = os.RemoveAll(f.dir)
	})
	// cp -a keeps the owner (the user postgres, as root) and the modes PostgreSQL checks.
	if out, err := exec.Command("cp", "-a", c.data(), f.data()).CombinedOutput(); err != nil {
		c.t.Fatalf("pgtest: copy the data directory: %v: %s", err, out)
	}
	if err := ownedFile(filepath.Join(f.data(), "standby.signal"), f.data()); err != nil {
		c.t.Fatalf("pgtest: standby.signal: %v", err)
	}
	if c.asUser != "" {
		if out, err := exec.Command("chown", c.asUser+":", f.dir).CombinedOutput(); err != nil {
			c.t.Fatalf("pgtest: chown %s: %v: %s", f.dir, err, out)
		}
	}
	f.port = freePort(c.t)
	f.Start()
	if err := f.run("pg_ctl", "-D", f.data(), "-w", "-t", "60", "-s", "promote"); err != nil {
		c.t.Fatalf("pgtest: pg_ctl promote: %v", err)
	}
	c.Start()
	return f
}

// ownedFile creates the empty file name with the owner of dir.
func ownedFile(name, dir string) error {
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(name, nil, 0o600); err != nil {
		return err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return os.Chown(name, int(st.Uid), int(st.Gid))
}

// Start starts the (stopped) server and waits until it accepts connections.
func (c *Cluster) Start() {
	c.t.Helper()
	// synchronous_commit stays on: a commit must be written (to the OS) before it is
	// acknowledged, or an immediate stop loses acknowledged transactions. fsync can
	// stay off: the machine does not crash, only the server.
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c synchronous_commit=on "+
		"-c full_page_writes=off -c max_connections=100", c.port, c.dir)
	if err := c.run("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "postgres.log"), "-w", "-t", "60", "-s",
		"-o", opts, "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
		c.t.Fatalf("pgtest: pg_ctl start: %v\n%s", err, log)
	}
}

// Stop stops the server the way a crash would (pg_ctl stop -m immediate): open
// connections break, new ones are refused, and the next Start runs crash recovery.
func (c *Cluster) Stop() {
	c.t.Helper()
	if err := c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "-t", "30", "-s", "stop"); err != nil {
		c.t.Fatalf("pgtest: pg_ctl stop: %v", err)
	}
}

// Freeze stops every process of the running server with SIGSTOP: the postmaster
// first, so that it forks no backend the list would miss, then its children. To its
// clients the server is alive but silent: connections are accepted by the kernel and
// packets acknowledged, but no statement is answered. Thaw resumes it; so does the
// end of the test (before the cluster is stopped).
func (c *Cluster) Freeze() {
	c.t.Helper()
	pid := c.postmasterPID()
	c.signal(pid, syscall.SIGSTOP)
	children := c.children(pid)
	for _, child := range children {
		c.signal(child, syscall.SIGSTOP)
	}
	c.frozen = append([]int{pid}, children...)
	c.t.Cleanup(c.Thaw)
}

// Thaw resumes the processes Freeze stopped (nothing if none are).
func (c *Cluster) Thaw() {
	for i := len(c.frozen) - 1; i >= 0; i-- {
		_ = syscall.Kill(c.frozen[i], syscall.SIGCONT)
	}
	c.frozen = nil
}

// postmasterPID reads the first line of postmaster.pid.
func (c *Cluster) postmasterPID() int {
	c.t.Helper()
	data, err := os.ReadFile(filepath.Join(c.data(), "postmaster.pid"))
	if err != nil {
		c.t.Fatalf("pgtest: the server is not running: %v", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		c.t.Fatalf("pgtest: postmaster.pid: %v", err)
	}
	return pid
}

// children lists the processes whose parent is pid, from /proc.
func (c *Cluster) children(pid int) []int {
	c.t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		c.t.Fatalf("pgtest: %v", err)
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited since the listing
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

func (c *Cluster) signal(pid int, sig syscall.Signal) {
	c.t.Helper()
	if err := syscall.Kill(pid, sig); err != nil {
		c.t.Fatalf("pgtest: signal %d: %v", pid, err)
	}
}

func (c *Cluster) run(name string, args ...string) error {
	bin := filepath.Join(c.bindir, name)
	if c.asUser != "" {
		args = append([]string{"-u", c.asUser, "--", bin}, args...)
		bin = "runuser"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, out)
	}
	return nil
}

// findBindir finds initdb and pg_ctl like scripts/lib/pg.sh: the directory pgtest.sh
// recorded for the test cluster, PATH, pg_config --bindir, then the newest Debian or
// RHEL server directory.
func findBindir() (string, error) {
	ok := func(d string) bool {
		for _, b := range []string{"initdb", "pg_ctl"} {
			if fi, err := os.Stat(filepath.Join(d, b)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	var cands []string
	if dir := os.Getenv("PGTEST_DIR"); dir != "" {
		if b, err := os.ReadFile(filepath.Join(dir, "bindir")); err == nil {
			cands = append(cands, strings.TrimSpace(string(b)))
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		cands = append(cands, filepath.Dir(p))
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		cands = append(cands, strings.TrimSpace(string(out)))
	}
	for _, pattern := range []string{"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin"} {
		m, _ := filepath.Glob(pattern)
		sort.Sort(sort.Reverse(sort.StringSlice(m)))
		cands = append(cands, m...)
	}
	for _, d := range cands {
		if d != "" && ok(d) {
			return d, nil
		}
	}
	return "", errors.New("initdb and pg_ctl not found (PATH, pg_config --bindir, /usr/lib/postgresql/*/bin)")
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
