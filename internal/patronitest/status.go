package patronitest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Roles of a member in Members, as Patroni's GET /cluster names them.
const (
	RoleLeader      = "leader"
	RoleSyncStandby = "sync_standby"
	RoleReplica     = "replica"
)

// StateRunning is the Patroni state of a member whose PostgreSQL runs.
const StateRunning = "running"

// ErrNoLeader is the answer of Leader while the cluster has no leader.
var ErrNoLeader = errors.New("the cluster has no leader")

// Member is one node as Patroni's REST API (GET /cluster) reports it.
type Member struct {
	Name     string
	Role     string // RoleLeader, RoleSyncStandby or RoleReplica
	State    string // StateRunning, or "starting", "stopped", "crashed", "creating replica", …
	Host     string
	Timeline int
	// Lag is how many bytes of WAL the member lacks, as Patroni last saw it: 0 for
	// the leader, -1 when Patroni does not know.
	Lag int64
}

// Members returns the cluster's members as the first node whose REST API answers
// sees them. A killed node stays listed until its key in etcd expires (ttl, 10 s).
func (c *Cluster) Members(ctx context.Context) ([]Member, error) {
	var errs []error
	for _, n := range c.nodes {
		var body struct {
			Members []struct {
				Name     string          `json:"name"`
				Role     string          `json:"role"`
				State    string          `json:"state"`
				Host     string          `json:"host"`
				Timeline int             `json:"timeline"`
				Lag      json.RawMessage `json:"lag"`
			} `json:"members"`
		}
		if err := getJSON(ctx, n.apiURL()+"/cluster", &body); err != nil {
			errs = append(errs, err)
			continue
		}
		members := make([]Member, len(body.Members))
		for i, m := range body.Members {
			role := m.Role
			if role == "master" || role == "primary" { // older and newer Patroni releases
				role = RoleLeader
			}
			lag := int64(-1)
			if role == RoleLeader {
				lag = 0
			} else if err := json.Unmarshal(m.Lag, &lag); err != nil {
				lag = -1 // "unknown"
			}
			members[i] = Member{Name: m.Name, Role: role, State: m.State, Host: m.Host, Timeline: m.Timeline, Lag: lag}
		}
		return members, nil
	}
	return nil, fmt.Errorf("no node's REST API answers: %w", errors.Join(errs...))
}

// Leader returns the name of the member that holds the leader key. Right after a
// crash that is still the dead node, until its key expires: WaitLeader waits for a
// leader that accepts writes.
func (c *Cluster) Leader(ctx context.Context) (string, error) {
	members, err := c.Members(ctx)
	if err != nil {
		return "", err
	}
	for _, m := range members {
		if m.Role == RoleLeader {
			return m.Name, nil
		}
	}
	return "", ErrNoLeader
}

// WaitLeader waits for a leader other than notNode ("" for any) whose PostgreSQL
// accepts writes, and returns its name and how long the wait took.
func (c *Cluster) WaitLeader(ctx context.Context, notNode string) (string, time.Duration, error) {
	start := time.Now()
	var leader string
	err := poll(ctx, 100*time.Millisecond, func(ctx context.Context) error {
		var err error
		if leader, err = c.Leader(ctx); err != nil {
			return err
		}
		if leader == notNode {
			return fmt.Errorf("%s still holds the leader key", leader)
		}
		_, err = c.primaryStatus(ctx, leader)
		return err
	})
	if err != nil {
		if notNode != "" {
			return "", time.Since(start), fmt.Errorf("no leader other than %s accepts writes after %s: %w",
				notNode, time.Since(start).Round(time.Millisecond), err)
		}
		return "", time.Since(start), fmt.Errorf("no leader accepts writes after %s: %w", time.Since(start).Round(time.Millisecond), err)
	}
	return leader, time.Since(start), nil
}

// WaitHealthy waits until the cluster is whole again: a leader that accepts writes,
// every node the harness runs listed by Patroni as running and streaming from the
// leader and, in synchronous mode with a standby up, a synchronous standby, which
// has every commit (the leader answers a commit only once that standby has it).
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	if err := poll(ctx, 200*time.Millisecond, c.healthy); err != nil {
		return fmt.Errorf("the cluster is not healthy: %w", err)
	}
	return nil
}

func (c *Cluster) healthy(ctx context.Context) error {
	members, err := c.Members(ctx)
	if err != nil {
		return err
	}
	byName := map[string]Member{}
	leader := ""
	for _, m := range members {
		byName[m.Name] = m
		if m.Role == RoleLeader {
			leader = m.Name
		}
	}
	up := c.upNodes()
	for _, name := range up {
		if m, ok := byName[name]; !ok || m.State != StateRunning {
			return fmt.Errorf("node %s is not running yet (Patroni: %+v)", name, m)
		}
	}
	if leader == "" || !slices.Contains(up, leader) {
		return fmt.Errorf("no running leader (leader key: %q)", leader)
	}
	standbys, err := c.primaryStatus(ctx, leader)
	if err != nil {
		return err
	}
	sync := false
	for _, name := range up {
		if name == leader {
			continue
		}
		s, ok := standbys[name]
		if !ok || s.state != "streaming" {
			return fmt.Errorf("node %s does not stream from the leader %s (pg_stat_replication: %+v)", name, leader, s)
		}
		if byName[name].Role == RoleSyncStandby && (s.syncState == "sync" || s.syncState == "quorum") {
			sync = true
		}
	}
	if c.sync && len(up) > 1 && !sync {
		return fmt.Errorf("no synchronous standby streams from the leader %s (members: %+v)", leader, members)
	}
	return nil
}

// waitNode waits until the node runs: the leader accepting writes, or a replica
// streaming from the leader.
func (c *Cluster) waitNode(ctx context.Context, n *node) error {
	err := poll(ctx, 200*time.Millisecond, func(ctx context.Context) error {
		members, err := c.Members(ctx)
		if err != nil {
			return err
		}
		leader := ""
		var self *Member
		for i, m := range members {
			if m.Role == RoleLeader {
				leader = m.Name
			}
			if m.Name == n.name {
				self = &members[i]
			}
		}
		if self == nil || self.State != StateRunning {
			return fmt.Errorf("node %s is not running yet (Patroni: %+v)", n.name, self)
		}
		if leader == "" {
			return ErrNoLeader
		}
		standbys, err := c.primaryStatus(ctx, leader)
		if err != nil || leader == n.name {
			return err
		}
		if s := standbys[n.name]; s.state != "streaming" {
			return fmt.Errorf("node %s does not stream from the leader %s (pg_stat_replication: %+v)", n.name, leader, s)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("node %s does not run: %w", n.name, err)
	}
	return nil
}

// standby is a row of the primary's pg_stat_replication.
type standby struct{ state, syncState string }

// primaryStatus checks that the node is a primary that commits a write (which, in
// synchronous mode, a synchronous standby must acknowledge) and returns its
// pg_stat_replication by application_name, which Patroni sets to the member's name.
func (c *Cluster) primaryStatus(ctx context.Context, name string) (map[string]standby, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL(name))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var recovery bool
	if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovery); err != nil {
		return nil, fmt.Errorf("ask %s whether it is in recovery: %w", name, err)
	}
	if recovery {
		return nil, fmt.Errorf("%s is in recovery: a standby", name)
	}
	if _, err := conn.Exec(ctx, "SELECT txid_current()"); err != nil {
		return nil, fmt.Errorf("commit a write on %s: %w", name, err)
	}
	rows, err := conn.Query(ctx, "SELECT application_name, state, sync_state FROM pg_stat_replication")
	if err != nil {
		return nil, fmt.Errorf("read pg_stat_replication on %s: %w", name, err)
	}
	standbys := map[string]standby{}
	var app string
	var s standby
	_, err = pgx.ForEachRow(rows, []any{&app, &s.state, &s.syncState}, func() error {
		standbys[app] = s
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read pg_stat_replication on %s: %w", name, err)
	}
	return standbys, nil
}

// upNodes lists the nodes the harness runs: started and not killed since.
func (c *Cluster) upNodes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var up []string
	for _, n := range c.nodes {
		if n.up {
			up = append(up, n.name)
		}
	}
	return up
}

// errorOutput trims a command's output for an error message.
func errorOutput(out []byte) string {
	s := strings.TrimSpace(string(out))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}
