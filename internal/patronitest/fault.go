package patronitest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Kill crashes the node's machine, as its clients and the other nodes see it:
// SIGKILL of its Patroni and, at once, of its postmaster and every PostgreSQL
// process (the page cache survives: fsync is off, see the package doc). Its
// clients' connections break without a word from the server. Patroni elects another leader once the dead
// leader's key expires (about 10 s); WaitLeader waits for it.
func (c *Cluster) Kill(ctx context.Context, name string) error {
	n, err := c.mustNode(name)
	if err != nil {
		return err
	}
	c.mu.Lock()
	p, up := n.patroni, n.up
	n.patroni, n.up = nil, false
	c.mu.Unlock()
	if !up {
		return fmt.Errorf("kill %s: the node is not running", name)
	}
	c.stopNode(n, p)
	if ctx.Err() != nil {
		return fmt.Errorf("kill %s: %w", name, ctx.Err())
	}
	return nil
}

// Freeze stops the node's machine without a crash, as its clients and the other
// nodes see it: SIGSTOP of its Patroni's process group, its postmaster and every
// PostgreSQL process. Its connections stay open and its ports accept (the kernel
// answers), but nothing is answered: no statement, no REST call. Patroni elects another
// leader once the frozen leader's key expires (about 10 s); WaitLeader waits for it.
// Thaw resumes the node.
func (c *Cluster) Freeze(ctx context.Context, name string) error {
	n, err := c.mustNode(name)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !n.up || n.patroni == nil {
		return fmt.Errorf("freeze %s: the node is not running", name)
	}
	if len(n.frozen) > 0 {
		return fmt.Errorf("freeze %s: the node is frozen already", name)
	}
	if err := syscall.Kill(-n.patroni.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("freeze %s: Patroni: %w", name, err)
	}
	n.frozen = append([]int{-n.patroni.cmd.Process.Pid}, n.stopPostgres()...)
	return ctx.Err()
}

// Thaw resumes what Freeze stopped, PostgreSQL first. A frozen leader that lost its
// key finds out at its next Patroni cycle and is demoted (rewound if need be) to
// follow the new leader; WaitHealthy waits for that.
//
// The node resumes as a frozen machine does, Patroni included, with two hazards of
// Patroni 3.0.2 (docs/high-availability.md): the resumed Patroni may act once on its
// cache of the cluster, still showing it the leader, and take the lead back (through
// etcd's v3 API; Options.EtcdV2 keeps it from doing so); and a Patroni started anew
// instead, on a PostgreSQL that still runs as a primary, first reloads it without
// synchronous_standby_names, which lets every commit waiting for the standby through,
// acknowledged, before it demotes the node (a failover test once lost 1 488
// acknowledged messages that way).
func (c *Cluster) Thaw(name string) error {
	n, err := c.mustNode(name)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(n.frozen) - 1; i >= 0; i-- {
		_ = syscall.Kill(n.frozen[i], syscall.SIGCONT)
	}
	n.frozen = nil
	return nil
}

// Start starts the Patroni of a killed node and waits until the node runs: as a
// replica streaming from the leader (a former leader is rewound with pg_rewind
// first), or as the leader if there is none.
func (c *Cluster) Start(ctx context.Context, name string) error {
	n, err := c.mustNode(name)
	if err != nil {
		return err
	}
	if err := c.startNode(n); err != nil {
		return err
	}
	return c.waitNode(ctx, n)
}

// Switchover makes candidate the leader the planned way (patronictl switchover
// --force): the leader stops, candidate is promoted and the former leader follows
// it. It returns once candidate accepts writes; WaitHealthy waits for the former
// leader to stream again. In synchronous mode the candidate must be the
// synchronous standby.
func (c *Cluster) Switchover(ctx context.Context, candidate string) error {
	if _, err := c.mustNode(candidate); err != nil {
		return err
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		return fmt.Errorf("switchover to %s: %w", candidate, err)
	}
	if leader == candidate {
		return fmt.Errorf("switchover to %s: it is the leader already", candidate)
	}
	// patronictl exits 0 even when the switchover fails: the leader tells.
	out, err := c.patronictl(ctx, "switchover", "--leader", leader, "--candidate", candidate, "--force")
	if err != nil {
		return err
	}
	err = poll(ctx, 100*time.Millisecond, func(ctx context.Context) error {
		now, err := c.Leader(ctx)
		if err != nil {
			return err
		}
		if now != candidate {
			return fmt.Errorf("the leader is %s", now)
		}
		_, err = c.primaryStatus(ctx, candidate)
		return err
	})
	if err != nil {
		return fmt.Errorf("switchover from %s to %s (patronictl: %s): %w", leader, candidate, out, err)
	}
	return nil
}

// Restart restarts the node's PostgreSQL through Patroni (patronictl restart
// --force), as an operator does to apply a setting, and waits until the node runs
// again. Meant for a replica; a leader restarts in place and stays the leader.
func (c *Cluster) Restart(ctx context.Context, name string) error {
	n, err := c.mustNode(name)
	if err != nil {
		return err
	}
	before, err := c.postmasterStart(ctx, name)
	if err != nil {
		return fmt.Errorf("restart %s: %w", name, err)
	}
	// patronictl exits 0 even when the restart fails: the postmaster's start time tells.
	out, err := c.patronictl(ctx, "restart", scope, name, "--force")
	if err != nil {
		return err
	}
	if err := c.waitNode(ctx, n); err != nil {
		return err
	}
	after, err := c.postmasterStart(ctx, name)
	if err != nil {
		return fmt.Errorf("restart %s: %w", name, err)
	}
	if !after.After(before) {
		return fmt.Errorf("restart %s: PostgreSQL still runs since %s (patronictl: %s)", name, before, out)
	}
	return nil
}

// postmasterStart is when the node's PostgreSQL started.
func (c *Cluster) postmasterStart(ctx context.Context, name string) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL(name))
	if err != nil {
		return time.Time{}, fmt.Errorf("connect to %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var t time.Time
	if err := conn.QueryRow(ctx, "SELECT pg_postmaster_start_time()").Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("read the start time of %s: %w", name, err)
	}
	return t, nil
}

// patronictl runs patronictl with the first node's configuration (any node's
// reaches the same etcd) and returns its output, also appended to
// logs/patronictl.log.
func (c *Cluster) patronictl(ctx context.Context, args ...string) (string, error) {
	args = append([]string{"-c", c.nodes[0].yml}, args...)
	cmd := exec.CommandContext(ctx, "patronictl", args...)
	cmd.Dir = c.dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + c.dir, "LC_ALL=C.UTF-8"}
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if f, ferr := os.OpenFile(filepath.Join(c.dir, "logs", "patronictl.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); ferr == nil {
		fmt.Fprintf(f, "%s $ patronictl %s\n%s\n", time.Now().Format(time.RFC3339Nano), strings.Join(args, " "), out)
		f.Close()
	}
	if err != nil {
		return "", fmt.Errorf("patronictl %s: %w: %s", strings.Join(args[2:], " "), err, errorOutput(out))
	}
	return errorOutput(out), nil
}
