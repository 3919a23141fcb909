package patronitest

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
	"sync"
	"testing"
	"time"
)

// MaxNodes is the largest number of PostgreSQL nodes a cluster may have.
const MaxNodes = 3

// StartTimeout bounds Start: etcd, the bootstrap of the first node, the base backup
// of the others and, in synchronous mode, a synchronous standby in place.
const StartTimeout = 90 * time.Second

// Options configure Start. The zero value is a two-node cluster in synchronous mode.
type Options struct {
	// Nodes is the number of PostgreSQL nodes, 1 to MaxNodes; 0 means 2.
	Nodes int
	// Async turns Patroni's synchronous_mode off: a commit is acknowledged before any
	// standby has it, so a failover may lose the last commits (asynchronous replication).
	Async bool
	// Strict sets Patroni's synchronous_mode_strict (with synchronous mode): a primary
	// without a synchronous standby commits nothing instead of committing alone, so
	// writes wait while the other node of a two-node cluster is down.
	Strict bool
	// EtcdV2 makes Patroni keep its state through etcd's v2 API (its etcd: section,
	// etcd started with --enable-v2) instead of the v3 API (etcd3:). Patroni 3.0.2's v2
	// client writes the leader key only if it still names this node, so a leader that
	// resumes after a pause (Freeze, Thaw) cannot take the lead back from the node
	// promoted meanwhile; its v3 client writes the key without comparing and sometimes
	// does (docs/high-availability.md, "A primary that resumes after a pause").
	EtcdV2 bool
}

// Cluster is a running Patroni cluster: one etcd member and its PostgreSQL nodes.
// Its methods are safe for concurrent use.
type Cluster struct {
	t        testing.TB
	dir      string // the cluster's directory; logs/ holds every log
	bindir   string // PostgreSQL's server binaries
	uid      uint32 // user postgres
	gid      uint32
	sync     bool
	strict   bool
	etcdV2   bool   // Patroni's etcd: section (the v2 API) instead of etcd3:
	port     int    // PostgreSQL's port, the same on every node's address
	etcdURL  string // etcd's client URL
	etcdPeer int    // etcd's peer port
	etcd     *proc
	nodes    []*node

	mu sync.Mutex // guards each node's patroni and up
}

// node is one PostgreSQL node and its Patroni.
type node struct {
	name    string
	host    string // loopback address of PostgreSQL and the REST API
	apiPort int
	dir     string
	yml     string
	log     string
	patroni *proc // nil while the node is down
	up      bool  // started by the harness and not killed since
	frozen  []int // what Freeze stopped (a negative pid: a process group), Patroni's group first
}

func (n *node) dataDir() string { return filepath.Join(n.dir, "data") }
func (n *node) apiURL() string  { return "http://" + net.JoinHostPort(n.host, strconv.Itoa(n.apiPort)) }

// Start starts a Patroni cluster for the test and returns once its leader accepts
// writes and, in synchronous mode, a synchronous standby streams (WaitHealthy). It
// skips the test under -short, when not running as root, or when patroni,
// patronictl, etcd or PostgreSQL's server binaries are missing. Everything it
// starts is killed, and its directory removed, when the test ends.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("patronitest: a Patroni cluster is not started under -short")
	}
	nodes := opts.Nodes
	if nodes == 0 {
		nodes = 2
	}
	if nodes < 1 || nodes > MaxNodes {
		t.Fatalf("patronitest: Options.Nodes is %d, want 1 to %d", opts.Nodes, MaxNodes)
	}
	if opts.Async && opts.Strict {
		t.Fatalf("patronitest: Options.Strict needs synchronous mode, which Options.Async turns off")
	}
	if os.Geteuid() != 0 {
		t.Skip("patronitest: needs root, to run etcd, Patroni and PostgreSQL as the user postgres")
	}
	for _, b := range []string{"patroni", "patronictl", "etcd"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("patronitest: %s is not on PATH (scripts/ensure-patroni.sh installs Patroni and etcd; make test runs it)", b)
		}
	}
	bindir, err := findBindir()
	if err != nil {
		t.Skipf("patronitest: %v", err)
	}
	pg, err := user.Lookup("postgres")
	if err != nil {
		t.Skipf("patronitest: no user postgres to run PostgreSQL as: %v", err)
	}
	uid, _ := strconv.ParseUint(pg.Uid, 10, 32)
	gid, _ := strconv.ParseUint(pg.Gid, 10, 32)

	// /tmp rather than TMPDIR: the user postgres must reach the directory.
	dir, err := os.MkdirTemp("/tmp", "queen-patroni.")
	if err != nil {
		t.Fatalf("patronitest: %v", err)
	}
	c := &Cluster{t: t, dir: dir, bindir: bindir, uid: uint32(uid), gid: uint32(gid), sync: !opts.Async, strict: opts.Strict,
		etcdV2: opts.EtcdV2}
	t.Cleanup(c.cleanup)
	start := time.Now()
	for attempt := 1; ; attempt++ {
		err := c.bringUp(nodes)
		if err == nil {
			break
		}
		if attempt == portAttempts || !c.portTaken() {
			t.Fatalf("patronitest: %v", err)
		}
		// Clusters of tests running at once share the loopback addresses: a port one
		// of them chose may be bound by another before its own server binds it.
		t.Logf("patronitest: a port was taken before its server bound it (%v); starting again on other ports", err)
		if err := c.teardown(); err != nil {
			t.Fatalf("patronitest: %v", err)
		}
	}
	t.Logf("patronitest: %d nodes healthy in %s (%s)", nodes, time.Since(start).Round(time.Millisecond), c.dir)
	return c
}

// portAttempts bounds how many times Start brings a cluster up when a port it chose
// was taken before its server bound it.
const portAttempts = 3

// bringUp lays the cluster out on free ports and starts etcd and every node, within
// StartTimeout: the first node bootstraps the cluster; the others are base backups of
// it, taken once it leads, so none of them races it for the initialize key.
func (c *Cluster) bringUp(nodes int) error {
	if err := c.layout(nodes); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.t.Context(), StartTimeout)
	defer cancel()
	if err := c.startEtcd(ctx); err != nil {
		return err
	}
	if err := c.startNode(c.nodes[0]); err != nil {
		return err
	}
	// A Patroni that cannot bootstrap (its PostgreSQL did not start) exits: the wait
	// for a leader ends then, not at StartTimeout.
	leaderCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func(p *proc) {
		select {
		case <-p.done:
			stop(fmt.Errorf("the Patroni of %s exited (see %s)", c.nodes[0].name, c.nodes[0].log))
		case <-leaderCtx.Done():
		}
	}(c.nodes[0].patroni)
	if _, _, err := c.WaitLeader(leaderCtx, ""); err != nil {
		return errors.Join(err, context.Cause(leaderCtx))
	}
	stop(nil)
	for _, n := range c.nodes[1:] {
		if err := c.startNode(n); err != nil {
			return err
		}
	}
	return c.WaitHealthy(ctx)
}

// portTaken reports whether a log of the cluster says a server could not bind its
// port (PostgreSQL's "Address already in use", etcd's "address already in use").
func (c *Cluster) portTaken() bool {
	logs, _ := filepath.Glob(filepath.Join(c.dir, "logs", "*.log"))
	for _, l := range logs {
		if b, err := os.ReadFile(l); err == nil && strings.Contains(strings.ToLower(string(b)), "address already in use") {
			return true
		}
	}
	return false
}

// teardown kills what bringUp started and empties the cluster's directory, for
// another attempt.
func (c *Cluster) teardown() error {
	c.stopAll()
	c.nodes, c.etcd = nil, nil
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(c.dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// layout picks the ports and writes the directories and configuration files.
func (c *Cluster) layout(nodes int) error {
	if err := os.Chmod(c.dir, 0o755); err != nil {
		return err
	}
	hosts := make([]string, nodes)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("127.0.0.%d", i+2)
	}
	var err error
	if c.port, err = freePort(hosts); err != nil {
		return err
	}
	apiPort, err := freePort(hosts)
	if err != nil {
		return err
	}
	clientPort, peerPort, err := freePortPair("127.0.0.1")
	if err != nil {
		return err
	}
	c.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	c.etcdPeer = peerPort
	for _, d := range []string{"logs", "etcd"} {
		if err := os.Mkdir(filepath.Join(c.dir, d), 0o755); err != nil {
			return err
		}
	}
	for i, h := range hosts {
		n := &node{name: fmt.Sprintf("n%d", i+1), host: h, apiPort: apiPort}
		n.dir = filepath.Join(c.dir, n.name)
		n.yml = filepath.Join(n.dir, "patroni.yml")
		n.log = filepath.Join(c.dir, "logs", n.name+".log")
		for _, d := range []string{n.dir, filepath.Join(n.dir, "sockets")} {
			if err := os.Mkdir(d, 0o755); err != nil {
				return err
			}
		}
		if err := c.writeConfig(n); err != nil {
			return err
		}
		c.nodes = append(c.nodes, n)
	}
	return chownTree(c.dir, int(c.uid), int(c.gid))
}

// Dir is the cluster's directory: a directory per node (n1, n2, …) with its
// patroni.yml and data directory, etcd's data and logs/, which holds one log per
// node (Patroni's output and PostgreSQL's server log) and etcd.log.
func (c *Cluster) Dir() string { return c.dir }

// Nodes returns the node names, n1 to nN.
func (c *Cluster) Nodes() []string {
	names := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		names[i] = n.name
	}
	return names
}

// Hosts returns the nodes' addresses, in node order (127.0.0.2 for n1, …).
func (c *Cluster) Hosts() []string {
	hosts := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		hosts[i] = n.host
	}
	return hosts
}

// Port is PostgreSQL's port, the same on every node's address.
func (c *Cluster) Port() int { return c.port }

// Env returns the PG_* variables that point a broker at the cluster: every host,
// the port, the superuser postgres (no password) and the database postgres. To use
// another database put PG_DB=name before them: config.Load keeps the first
// occurrence of a name.
func (c *Cluster) Env() []string {
	return []string{
		"PG_HOST=" + strings.Join(c.Hosts(), ","),
		"PG_PORT=" + strconv.Itoa(c.port),
		"PG_USER=postgres",
		"PG_PASSWORD=",
		"PG_DB=postgres",
	}
}

// URL is a postgres:// URL of the database postgres on the named node alone,
// whatever its role.
func (c *Cluster) URL(name string) string {
	n := c.node(name)
	if n == nil {
		return ""
	}
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable",
		net.JoinHostPort(n.host, strconv.Itoa(c.port)))
}

// DSN is a postgres:// URL of the database postgres listing every node with
// target_session_attrs=read-write: a connection made with it reaches the primary.
func (c *Cluster) DSN() string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = net.JoinHostPort(n.host, strconv.Itoa(c.port))
	}
	q := url.Values{"sslmode": {"disable"}, "target_session_attrs": {"read-write"}, "connect_timeout": {"5"}}
	return "postgres://postgres@" + strings.Join(addrs, ",") + "/postgres?" + q.Encode()
}

func (c *Cluster) node(name string) *node {
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

func (c *Cluster) mustNode(name string) (*node, error) {
	if n := c.node(name); n != nil {
		return n, nil
	}
	return nil, fmt.Errorf("no node %q in the cluster (nodes: %s)", name, strings.Join(c.Nodes(), ", "))
}

// cleanup kills every process the cluster started and removes its directory. When
// the test failed it keeps logs/, names it and prints the tail of each log.
func (c *Cluster) cleanup() {
	c.stopAll()
	if !c.t.Failed() {
		_ = os.RemoveAll(c.dir)
		return
	}
	logs, _ := filepath.Glob(filepath.Join(c.dir, "logs", "*.log"))
	sort.Strings(logs)
	for _, l := range logs {
		c.t.Logf("patronitest: last lines of %s:\n%s", l, tail(l, 40))
	}
	entries, _ := os.ReadDir(c.dir)
	for _, e := range entries {
		if e.Name() != "logs" {
			_ = os.RemoveAll(filepath.Join(c.dir, e.Name()))
		}
	}
	c.t.Logf("patronitest: the test failed; the cluster's logs are kept in %s", filepath.Join(c.dir, "logs"))
}

// stopAll kills every process the cluster started.
func (c *Cluster) stopAll() {
	for _, n := range c.nodes {
		c.mu.Lock()
		p := n.patroni
		n.patroni, n.up = nil, false
		c.mu.Unlock()
		c.stopNode(n, p)
	}
	if c.etcd != nil {
		c.etcd.kill()
	}
}

// tail returns the last lines of a file.
func tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// freePort returns a TCP port free on every one of hosts.
func freePort(hosts []string) (int, error) {
	for range 50 {
		ln, err := net.Listen("tcp", net.JoinHostPort(hosts[0], "0"))
		if err != nil {
			return 0, fmt.Errorf("find a free port on %s: %w", hosts[0], err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		free := true
		for _, h := range hosts[1:] {
			other, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(port)))
			if err != nil {
				free = false
				break
			}
			other.Close()
		}
		ln.Close()
		if free {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no port is free on all of %s", strings.Join(hosts, ", "))
}

// freePortPair returns two different free ports of host.
func freePortPair(host string) (int, int, error) {
	a, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, 0, fmt.Errorf("find a free port on %s: %w", host, err)
	}
	defer a.Close()
	b, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, 0, fmt.Errorf("find a free port on %s: %w", host, err)
	}
	defer b.Close()
	return a.Addr().(*net.TCPAddr).Port, b.Addr().(*net.TCPAddr).Port, nil
}

// findBindir finds PostgreSQL's server binaries: the directory of pg_ctl on PATH,
// else the newest Debian (/usr/lib/postgresql/N/bin) or RHEL (/usr/pgsql-N/bin) one.
func findBindir() (string, error) {
	need := []string{"postgres", "pg_ctl", "initdb", "pg_basebackup", "pg_rewind", "pg_controldata", "pg_isready"}
	ok := func(d string) bool {
		for _, b := range need {
			if _, err := os.Stat(filepath.Join(d, b)); err != nil {
				return false
			}
		}
		return true
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil && ok(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	var dirs []string
	for _, pattern := range []string{"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin"} {
		m, _ := filepath.Glob(pattern)
		dirs = append(dirs, m...)
	}
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		if ok(d) {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (" + strings.Join(need, ", ") +
		") on PATH, in /usr/lib/postgresql/*/bin or in /usr/pgsql-*/bin")
}

// pgVersion is the major version in a server binary directory's path, 0 if none.
func pgVersion(dir string) int {
	base := filepath.Base(filepath.Dir(dir)) // "15" or "pgsql-15"
	v, _ := strconv.Atoi(strings.TrimPrefix(base, "pgsql-"))
	return v
}

// chownTree gives the user postgres everything under dir, dir included.
func chownTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}
