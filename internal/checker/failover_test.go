package checker_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/checker"
	"github.com/queenmq/queen/internal/patronitest"
	"github.com/queenmq/queen/internal/store"
)

// flagTargetAny runs TestPostgresFailover's brokers with PG_TARGET_SESSION_ATTRS=any.
var flagTargetAny = flag.Bool("checker.target-any", false, "failover: brokers may connect to a standby (PG_TARGET_SESSION_ATTRS=any)")

// failoverRecovery is the longest a fault of the primary may keep pushes from being
// queued: a Patroni failover (ttl 10 s) plus the brokers' reconnect.
const failoverRecovery = 30 * time.Second

// failoverConfig is TestPostgresFailover's run: four producers pushing batches of up
// to ten over two brokers, two consumer groups and queue mode, a fifth of the
// completions made by transactions, while the primary is killed, a switchover is
// made and the replica restarts (and, in the long run, the primary freezes). With -checker.long (make test-failover) it is
// minutes long and goes through every fault twice.
func failoverConfig(long bool) (checker.Config, []string) {
	c := checker.DefaultConfig()
	c.Queue = "failover"
	c.PushBatch = 10
	c.Partitions = 8
	c.ConsumersPerGroup = 2
	c.Restarts = 0
	c.AllowBuffered = true
	c.TransactionProbability = 0.2
	c.Messages = 4000
	c.Duration = 45 * time.Second
	plan := []string{"kill-primary", "switchover", "restart-replica"}
	if long {
		// A frozen primary only in the long run: under the load of the whole suite
		// (make test), once, the cluster never became whole again after the frozen
		// leader resumed (the leader's Patroni logged "Synchronous replication key
		// updated by someone else" every cycle for minutes), which no broker can help.
		plan = append(plan, "freeze-primary")
		// About 80 pushes a second, each delivered to three groups: what two brokers under
		// the race detector and a synchronous pair share with the checker on two cores.
		c.Messages = 20000
		c.Duration = 4 * time.Minute
		c.Producers = 6
		c.ConsumersPerGroup = 3
		plan = append(plan, plan...)
	}
	return c, plan
}

// TestPostgresFailover runs the concurrency checker against two brokers on a real
// Patroni cluster (two PostgreSQL nodes on loopback, synchronous replication) given
// both hosts in PG_HOST, through a crash of the primary (SIGKILL of its Patroni and
// postmaster), the old primary rejoining as a standby, a planned switchover, a
// restart of the replica and, with -checker.long, a primary frozen (SIGSTOP) until
// another leads. It requires what an operator is promised: every push
// answered 2xx (queued or buffered) delivered, to every group, exactly as leases
// allow and in order per partition; transactions' follow-ups exactly once; no 5xx
// answer other than 503; and pushes queued again within failoverRecovery of each
// fault. The times are logged (docs/high-availability.md shows them). With
// -checker.target-any the brokers may connect to a standby, as a client that does not
// ask for the writable server does: every write there fails with SQLSTATE 25006, and
// the same guarantees must hold, except the time to recover.
func TestPostgresFailover(t *testing.T) {
	t.Parallel()
	cfg, plan := failoverConfig(*flagLong)
	// With a frozen primary in the plan, Patroni keeps its state through etcd's v2 API:
	// there its resumed leader cannot take the lead back, which its v3 client sometimes
	// does (Patroni's hazard, not queen's: docs/high-availability.md, "A primary that
	// resumes after a pause"); waitAfterThaw still fails the run, naming it, if it does.
	pc := patronitest.Start(t, patronitest.Options{Nodes: 2, EtcdV2: slices.Contains(plan, "freeze-primary")})

	cfg = withFlags(cfg)
	if *flagTargetAny && leaderChanges(plan)%2 == 1 {
		// Brokers allowed onto any server keep the first host that answers, the first
		// node, whatever its role: give it the lead back at the end, or they would stay on
		// a standby and the drain could not end.
		plan = append(plan, "switchover")
	}
	step := cfg.Duration / time.Duration(len(plan)+1)
	var healthy atomic.Int64 // when the last fault's cluster was healthy again (Unix nanoseconds)
	for i, name := range plan {
		// A frozen primary that resumes cancels the statements in flight when it stopped
		// (their statement_timeout ran out meanwhile), and stays the primary until
		// Patroni demotes it: requests may time out there (see checker.Fault.Timeouts).
		cfg.Faults = append(cfg.Faults, checker.Fault{At: step/2 + time.Duration(i)*step, Name: name,
			Do: failoverFault(t, pc, name, &healthy), Timeouts: name == "freeze-primary"})
	}
	// A statement to a frozen primary is abandoned after this + 5 s (the answer guard):
	// within failoverRecovery, with Patroni's 10 s to elect another leader.
	env := append(brokerSettings(pc.Env()), "DB_STATEMENT_TIMEOUT=10000")
	if *flagTargetAny {
		// As a client that lists every host without asking for the writable one: during
		// the switch its connections can land on the standby still in recovery, where
		// every write fails with SQLSTATE 25006, which must read as the database away.
		env = append(env, "PG_TARGET_SESSION_ATTRS=any")
	}
	brokers := startClusterEnv(t, env, 2)
	rep := runChecker(t, cfg, brokers)

	requireOutageSurvived(t, cfg, rep)
	require.Zero(t, rep.ServerErrors, "answers with a 5xx other than 503")

	require.Len(t, rep.FaultLog, len(plan))
	for _, f := range rep.FaultLog {
		t.Logf("checker: %s", f)
	}
	for _, f := range rep.FaultLog {
		if f.Name == "kill-primary" || f.Name == "freeze-primary" {
			require.True(t, f.Disrupted, "a dead or frozen primary went unnoticed: %s", f)
		}
		if *flagTargetAny {
			// Connections may stay on the old primary once it rejoins as a standby: nothing
			// is lost, but pushes are buffered until a switchover makes it the primary again.
			continue
		}
		require.True(t, f.Recovered, "pushes were never queued again: %s", f)
		require.LessOrEqual(t, f.Recovery, failoverRecovery, "%s", f)
	}
	requireBrokersOnThePrimary(t, pc, time.Unix(0, healthy.Load()))
	if !*flagTargetAny { // brokers on a standby read no timeline
		requireTimelines(t, pc, brokers.urls, slices.Contains(plan, "freeze-primary"))
	}
}

// requireTimelines checks what each broker reports of the primary's timeline: its
// newest connection reached the final primary's (queen_db_timeline), which is not
// behind (queen_db_timeline_behind), and, unless a frozen primary resumed (it takes
// connections until Patroni demotes it), no new connection found an earlier timeline
// than one before it (queen_db_timeline_regressions_total): a failover moves the
// timeline forward only.
func requireTimelines(t *testing.T, pc *patronitest.Cluster, urls []string, froze bool) {
	t.Helper()
	members, err := pc.Members(t.Context())
	require.NoError(t, err)
	want := 0
	for _, m := range members {
		if m.Role == patronitest.RoleLeader {
			want = m.Timeline
		}
	}
	require.Positive(t, want, "the leader's timeline: %+v", members)
	for _, u := range urls {
		mfs := scrapeMetrics(t, u)
		for _, name := range []string{"queen_db_timeline", "queen_db_timeline_behind", "queen_db_timeline_regressions_total"} {
			require.Len(t, mfs[name].GetMetric(), 1, "broker %s: %s", u, name)
		}
		timeline := mfs["queen_db_timeline"].GetMetric()[0].GetGauge().GetValue()
		behind := mfs["queen_db_timeline_behind"].GetMetric()[0].GetGauge().GetValue()
		found := mfs["queen_db_timeline_regressions_total"].GetMetric()[0].GetCounter().GetValue()
		t.Logf("broker %s: timeline %v (the primary's %d), behind %v, found earlier %v times", u, timeline, want, behind, found)
		require.EqualValues(t, want, timeline, "broker %s: the timeline of its newest connection", u)
		require.Zero(t, behind, "broker %s: behind on the final primary", u)
		if !froze {
			require.Zero(t, found, "broker %s: a failover reported as a primary from the past", u)
		}
	}
}

// scrapeMetrics reads a broker's /metrics/prometheus.
func scrapeMetrics(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(base + "/metrics/prometheus")
	require.NoError(t, err)
	defer res.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(res.Body)
	require.NoError(t, err)
	return mfs
}

// requireBrokersOnThePrimary waits until, on the primary of pc, both brokers' wake-up
// listeners are connected (they hold their listener lock) and a leader-gated background job has run after
// since: the brokers followed the primary with everything, not only their pools.
func requireBrokersOnThePrimary(t *testing.T, pc *patronitest.Cluster, since time.Time) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pc.DSN())
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.WithoutCancel(t.Context())) }()
	var listeners, jobs int
	require.Eventually(t, func() bool {
		err := conn.QueryRow(t.Context(), `SELECT
			(SELECT count(*) FROM pg_locks l WHERE `+store.WakeListenerLocks+`
			   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())),
			(SELECT count(*) FROM queen.maintenance_jobs WHERE last_run_at > $1)`, since).Scan(&listeners, &jobs)
		return err == nil && listeners >= 2 && jobs > 0
	}, failoverRecovery, 100*time.Millisecond,
		"on the primary: %d wake-up listeners (want 2), %d jobs run since %s", listeners, jobs, since)
}

// failoverFault returns the Do of the named fault on pc. Each returns once the cluster
// is healthy again (a leader, and its synchronous standby streaming), so that the
// next fault meets a cluster that can survive it.
func failoverFault(t *testing.T, pc *patronitest.Cluster, name string, healthy *atomic.Int64) func(context.Context) error {
	t.Helper()
	return func(ctx context.Context) (err error) {
		defer func() {
			if err == nil {
				healthy.Store(time.Now().UnixNano())
			}
		}()
		leader, err := pc.Leader(ctx)
		if err != nil {
			return err
		}
		other := pc.Nodes()[0]
		if i := slices.Index(pc.Nodes(), leader); i == 0 {
			other = pc.Nodes()[1]
		}
		switch name {
		case "kill-primary":
			if err := pc.Kill(ctx, leader); err != nil {
				return err
			}
			next, took, err := pc.WaitLeader(ctx, leader)
			if err != nil {
				return err
			}
			t.Logf("failover: %s killed, %s leads after %s", leader, next, took.Round(time.Millisecond))
			if err := pc.Start(ctx, leader); err != nil {
				return err
			}
		case "freeze-primary":
			next, err := freezePrimary(ctx, t, pc, leader)
			if err != nil {
				return err
			}
			return waitAfterThaw(ctx, pc, leader, next)
		case "switchover":
			if err := pc.Switchover(ctx, other); err != nil {
				return err
			}
		case "restart-replica":
			if err := pc.Restart(ctx, other); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown fault %q", name)
		}
		return pc.WaitHealthy(ctx)
	}
}

// freezePrimary stops the leader's machine without a crash (SIGSTOP of its Patroni and
// PostgreSQL), waits for another leader, and resumes it, which Patroni then demotes.
// The brokers' connections to it stay open and unanswered: only their answer guard
// (DB_STATEMENT_TIMEOUT + 5 s) gets them off it.
func freezePrimary(ctx context.Context, t *testing.T, pc *patronitest.Cluster, leader string) (next string, err error) {
	if err := pc.Freeze(ctx, leader); err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, pc.Thaw(leader)) }()
	next, took, err := pc.WaitLeader(ctx, leader)
	if err != nil {
		return "", err
	}
	t.Logf("failover: %s frozen, %s leads after %s", leader, next, took.Round(time.Millisecond))
	return next, nil
}

// waitAfterThaw waits until the cluster is healthy again after the frozen leader
// resumed, and fails at once, naming the cause, if the node promoted meanwhile (next)
// is demoted instead: Patroni 3.0.2 on etcd's v3 API can let a resumed leader take the
// lead back, and what next committed meanwhile is then lost (docs/high-availability.md, "A primary
// that resumes after a pause"), which the checker would report as queen's, or wait for
// a cluster that does not heal.
func waitAfterThaw(ctx context.Context, pc *patronitest.Cluster, frozen, next string) error {
	retook := fmt.Errorf("%s took the lead back from %s after it resumed: Patroni's hazard of "+
		"docs/high-availability.md (\"A primary that resumes after a pause\"), not queen's; what %s "+
		"committed meanwhile is lost", frozen, next, next)
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	healthy := make(chan error, 1)
	go func() { healthy <- pc.WaitHealthy(hctx) }()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-healthy:
			if now, lerr := pc.Leader(ctx); err == nil && lerr == nil && now == frozen {
				return retook
			}
			return err
		case <-tick.C:
			if inRecovery(ctx, pc.URL(next)) {
				return retook
			}
		}
	}
}

// inRecovery reports whether the server at url answers that it is a standby.
func inRecovery(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return false
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	var standby bool
	return conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&standby) == nil && standby
}

// leaderChanges counts the faults of plan that move the lead to the other node.
func leaderChanges(plan []string) int {
	n := 0
	for _, name := range plan {
		if name != "restart-replica" {
			n++
		}
	}
	return n
}
