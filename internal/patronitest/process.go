package patronitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Processes. Every process runs as the user postgres, in a process group of its own,
// with its output appended to a log under logs/. Patroni starts its postmaster in a
// session of its own (so that PostgreSQL outlives a Patroni crash): the harness finds
// a node's postmaster by its data directory on the command line.

// proc is a process the harness started.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has been waited for
}

// spawn starts name with args as the user postgres, output appended to logPath.
func (c *Cluster) spawn(logPath, home, name string, args ...string) (*proc, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close() // the child has its own copy
	cmd := exec.Command(name, args...)
	cmd.Dir = home
	cmd.Env = []string{
		"PATH=" + c.bindir + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"LC_ALL=C.UTF-8",
		"PYTHONUNBUFFERED=1",
	}
	if runtime.GOARCH != "amd64" {
		// etcd 3.4 runs on other architectures only when told so.
		cmd.Env = append(cmd.Env, "ETCD_UNSUPPORTED_ARCH="+runtime.GOARCH)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: c.uid, Gid: c.gid},
		Setpgid:    true,
		// If the test binary dies without its cleanup (a go test timeout), so does
		// the process; a postmaster, in its own session, still outlives it.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// kill sends SIGKILL to the process's group and waits (a few seconds at most) for
// the process to end.
func (p *proc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
	}
}

// startEtcd starts the single etcd member and waits until it is healthy.
func (c *Cluster) startEtcd(ctx context.Context) error {
	peer := fmt.Sprintf("http://127.0.0.1:%d", c.etcdPeer)
	dir := filepath.Join(c.dir, "etcd")
	args := []string{"--name", "etcd",
		"--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", c.etcdURL,
		"--advertise-client-urls", c.etcdURL,
		"--listen-peer-urls", peer,
		"--initial-advertise-peer-urls", peer,
		"--initial-cluster", "etcd=" + peer,
		"--initial-cluster-state", "new",
		"--initial-cluster-token", filepath.Base(c.dir),
		"--logger", "zap",
		"--log-outputs", "stderr",
	}
	if c.etcdV2 {
		args = append(args, "--enable-v2=true")
	}
	p, err := c.spawn(filepath.Join(c.dir, "logs", "etcd.log"), dir, "etcd", args...)
	if err != nil {
		return err
	}
	c.etcd = p
	err = poll(ctx, 50*time.Millisecond, func(ctx context.Context) error {
		select {
		case <-p.done:
			return errExited
		default:
		}
		var h struct {
			Health string `json:"health"`
		}
		if err := getJSON(ctx, c.etcdURL+"/health", &h); err != nil {
			return err
		}
		if h.Health != "true" {
			return fmt.Errorf("etcd reports health %q", h.Health)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("etcd on %s is not healthy (see %s): %w", c.etcdURL, filepath.Join(c.dir, "logs", "etcd.log"), err)
	}
	return nil
}

// errExited is a process that ended while the harness waited for it.
var errExited = errors.New("the process exited")

// startNode starts the node's Patroni, unless the node runs already.
func (c *Cluster) startNode(n *node) error {
	c.mu.Lock()
	if n.up {
		c.mu.Unlock()
		return fmt.Errorf("start %s: the node is already running", n.name)
	}
	n.up = true // claimed: a concurrent start or kill sees it
	c.mu.Unlock()
	p, err := c.spawn(n.log, n.dir, "patroni", n.yml)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		n.up = false
		return fmt.Errorf("start %s: %w", n.name, err)
	}
	n.patroni = p
	return nil
}

// stopNode crashes the node: SIGKILL of its Patroni (p, nil if not running) with its
// process group, then of its postmaster with every child at once, as a machine
// crash would; the shared memory segment the postmaster leaves behind is removed,
// as memory is after a reboot.
func (c *Cluster) stopNode(n *node, p *proc) {
	if p != nil {
		p.kill()
	}
	shmid := n.shmid()
	all := n.stopPostgres()
	for _, pid := range all {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = poll(ctx, 20*time.Millisecond, func(context.Context) error {
		for _, pid := range all {
			if alive(pid) {
				return fmt.Errorf("process %d is still alive", pid)
			}
		}
		return nil
	})
	if shmid > 0 {
		_ = exec.Command("ipcrm", "-m", strconv.Itoa(shmid)).Run()
	}
}

// stopPostgres stops (SIGSTOP) the node's postmaster, first, so that it forks no child
// the list would miss, and then every child of it; it returns them, postmasters first.
func (n *node) stopPostgres() []int {
	postmasters := pidsWhere(func(_ int, cmdline string) bool {
		return strings.Contains(cmdline, n.dataDir())
	})
	all := slices.Clone(postmasters)
	for _, pid := range postmasters {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
	for _, pid := range postmasters {
		for _, child := range pidsWhere(func(p int, _ string) bool { return parent(p) == pid }) {
			_ = syscall.Kill(child, syscall.SIGSTOP)
			all = append(all, child)
		}
	}
	return all
}

// shmid is the System V shared memory id recorded in the node's postmaster.pid
// (line 7: key and id), 0 if none.
func (n *node) shmid() int {
	b, err := os.ReadFile(filepath.Join(n.dataDir(), "postmaster.pid"))
	if err != nil {
		return 0
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 7 {
		return 0
	}
	f := strings.Fields(lines[6])
	if len(f) != 2 {
		return 0
	}
	id, _ := strconv.Atoi(f[1])
	return id
}

// pidsWhere lists the processes for which match, given the pid and the command
// line (arguments joined by spaces), is true.
func pidsWhere(match func(pid int, cmdline string) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if match(pid, string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// stat returns the state and parent of a process from /proc/<pid>/stat.
func stat(pid int) (state byte, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0][0], ppid, true
}

func parent(pid int) int {
	_, ppid, _ := stat(pid)
	return ppid
}

// alive reports whether pid runs: a zombie has ended.
func alive(pid int) bool {
	state, _, ok := stat(pid)
	return ok && state != 'Z' && state != 'X'
}

// writeConfig writes the node's patroni.yml (as JSON, which is YAML).
func (c *Cluster) writeConfig(n *node) error {
	pg := net.JoinHostPort(n.host, strconv.Itoa(c.port))
	api := net.JoinHostPort(n.host, strconv.Itoa(n.apiPort))
	user := map[string]string{"username": "postgres"}
	dcs := "etcd3"
	if c.etcdV2 {
		dcs = "etcd"
	}
	cfg := map[string]any{
		"scope":     scope,
		"namespace": "/queen/",
		"name":      n.name,
		"restapi":   map[string]any{"listen": api, "connect_address": api},
		dcs:         map[string]any{"host": strings.TrimPrefix(c.etcdURL, "http://")},
		"watchdog":  map[string]any{"mode": "off"},
		"bootstrap": map[string]any{
			"dcs": map[string]any{
				// A dead leader's key expires after ttl; loop_wait + 2 * retry_timeout
				// must not exceed it. A failover takes about 10 s.
				"ttl":                     10,
				"loop_wait":               1,
				"retry_timeout":           4,
				"maximum_lag_on_failover": 0,
				"synchronous_mode":        c.sync,
				"synchronous_mode_strict": c.strict,
				"postgresql": map[string]any{
					"use_pg_rewind": true,
					"use_slots":     true,
					"parameters": map[string]any{
						"wal_log_hints":   "on", // pg_rewind needs it (or data checksums)
						"max_connections": 300,  // two brokers' pools and the tests' own
						"shared_buffers":  "32MB",
						// The harness crashes processes, never the machine: what was
						// written reaches the disk through the page cache anyway.
						"fsync": "off",
					},
				},
			},
			"initdb": []any{map[string]string{"encoding": "UTF8"}, map[string]string{"locale": "C"}},
		},
		"postgresql": map[string]any{
			"listen":          pg,
			"connect_address": pg,
			"data_dir":        n.dataDir(),
			"bin_dir":         c.bindir,
			"pgpass":          filepath.Join(n.dir, "pgpass"),
			"authentication":  map[string]any{"superuser": user, "replication": user, "rewind": user},
			// A socket directory per node: nodes sharing one would share its lock file.
			"parameters": map[string]any{"unix_socket_directories": filepath.Join(n.dir, "sockets")},
			"pg_hba": []string{
				"local all all trust",
				"host all all 127.0.0.0/8 trust",
				"host replication all 127.0.0.0/8 trust",
			},
			"basebackup": []any{map[string]string{"checkpoint": "fast"}},
		},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(n.yml, append(b, '\n'), 0o644)
}

// scope is the Patroni cluster's name.
const scope = "queen"

// getJSON decodes the JSON body of a 200 answer to GET url.
func getJSON(ctx context.Context, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

// poll calls check every interval until it returns nil or ctx ends; then it returns
// ctx's error and check's last one.
func poll(ctx context.Context, every time.Duration, check func(ctx context.Context) error) error {
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; last: %w", ctx.Err(), err)
		case <-ticker.C:
		}
	}
}
