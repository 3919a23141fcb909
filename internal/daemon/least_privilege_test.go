package daemon_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
	"github.com/queenmq/queen/internal/daemon"
	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/maintenance"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/schema"
	"github.com/queenmq/queen/internal/testlog"
	"github.com/queenmq/queen/internal/testwait"
)

// TestLeastPrivilegeBroker follows docs/postgresql.md, "Least privilege", on a fresh
// database: an owner role applies `queen schema` output with psql, the grants block of
// the page (read from the page itself, so the two cannot drift) gives a login role
// only DML, and a whole broker runs as that role with QUEEN_APPLY_SCHEMA=0, finding
// its database through PG_DATABASE alone. It serves push, pop and ack, every
// maintenance job completes a cycle, the activity counters and the heartbeat are
// written, and nothing in the log is a permission error (SQLSTATE 42501).
func TestLeastPrivilegeBroker(t *testing.T) {
	t.Parallel()
	dbURL, dbName := emptyDatabase(t)
	admin := connect(t, dbURL)
	owner, brokerRole := tempRole(t, admin, "queen_owner", false), tempRole(t, admin, "queen_broker", true)
	execSQL(t, admin, "GRANT CREATE ON DATABASE "+pgx.Identifier{dbName}.Sanitize()+" TO "+owner)

	applyScript(t, dbURL, owner)
	grants := docGrants(t)
	grants = strings.NewReplacer("queen_owner", owner, "queen_broker", brokerRole,
		"ON DATABASE queen TO", "ON DATABASE "+pgx.Identifier{dbName}.Sanitize()+" TO").Replace(grants)
	execSQL(t, admin, grants)

	var canCreate, canTruncate bool
	require.NoError(t, admin.QueryRow(ctxT(t), `SELECT has_schema_privilege($1, 'queen', 'CREATE'),
		has_table_privilege($1, 'queen.messages', 'TRUNCATE')`, brokerRole).Scan(&canCreate, &canTruncate))
	require.False(t, canCreate || canTruncate, "the broker's role may run no DDL")

	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	var logs testlog.Buffer
	tb := serve(t, daemontest.Options{NoDatabase: true, Logs: &logs, Env: []string{
		"PG_HOST=" + u.Hostname(), "PG_PORT=" + u.Port(), "PG_DATABASE=" + dbName,
		"PG_USER=" + brokerRole, "PG_PASSWORD=" + brokerRole, "QUEEN_APPLY_SCHEMA=0", "LOG_LEVEL=debug",
		// Every background job, at short intervals.
		"RETENTION_INTERVAL=200", "EVICTION_INTERVAL=200", "PARTITION_LOOKUP_RECONCILE_INTERVAL_MS=200",
		"DLQ_RETENTION_DAYS=1", "QUEEN_ANALYZE_INTERVAL=1s", "QUEEN_TENANCY_HEADER=X-Queen-Tenant",
		"QUEEN_TENANCY_USAGE_INTERVAL=1s", "QUEEN_ANALYTICS_BUCKET=1s", "QUEEN_ANALYTICS_FLUSH_INTERVAL=1s",
		"QUEEN_STATS_LOG_INTERVAL=1s",
	}})
	c := tb.client

	const q = "least-privilege"
	configure(t, tb, q, api.QueueOptions{RetryLimit: api.Int(1)})
	pushed, err := c.Push(ctxT(t), api.PushItem{Queue: q, Payload: []byte(`{"n":1}`)},
		api.PushItem{Queue: q, Payload: []byte(`{"n":2}`)})
	require.NoError(t, err)
	for _, r := range pushed {
		require.Equal(t, api.PushStatusQueued, r.Status, "%+v", r)
	}
	popped, err := c.Pop(ctxT(t), client.PopOptions{Queue: q, Batch: 2})
	require.NoError(t, err)
	require.Len(t, popped.Messages, 2)
	for _, m := range popped.Messages {
		res, err := c.Ack(ctxT(t), api.AckRequest{TransactionID: m.TransactionID, PartitionID: m.PartitionID,
			LeaseID: popped.LeaseID})
		require.NoError(t, err)
		require.True(t, res.Success, "%+v", res)
	}
	grouped, err := c.Pop(ctxT(t), client.PopOptions{Queue: q, ConsumerGroup: "audit", Batch: 2, AutoAck: true})
	require.NoError(t, err)
	require.Len(t, grouped.Messages, 2, "a consumer group reads the queue from the start")

	jobs := []string{maintenance.JobRetention, maintenance.JobCompletedRetention, maintenance.JobEviction,
		maintenance.JobDLQRetention, maintenance.JobPartitionCleanup, maintenance.JobConsumerCleanup,
		maintenance.JobLeaseReclaim, maintenance.JobMetricsCleanup, maintenance.JobConsumerLag,
		maintenance.JobReplicaCleanup, maintenance.JobTenancyUsage, maintenance.JobAnalyze,
		maintenance.JobLookupReconcile, maintenance.JobKVSweep}
	sort.Strings(jobs)
	var succeeded []string
	var activity, replicas int
	_ = testwait.Until(30*time.Second, 100*time.Millisecond, func() error {
		rows, err := admin.Query(ctxT(t), `SELECT name FROM queen.maintenance_jobs
			WHERE last_finished_at IS NOT NULL AND last_error IS NULL ORDER BY name`)
		require.NoError(t, err)
		succeeded, err = pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.NoError(t, admin.QueryRow(ctxT(t), `SELECT (SELECT count(*) FROM queen.system_activity),
			(SELECT count(*) FROM queen.replicas)`).Scan(&activity, &replicas))
		if len(succeeded) == len(jobs) && activity > 0 && replicas > 0 {
			return nil
		}
		return errors.New("not yet") // the assertions below say what is missing
	})
	require.Equal(t, jobs, succeeded, "every maintenance job ran a cycle without error")
	require.Positive(t, activity, "the activity counters were flushed")
	require.Positive(t, replicas, "the heartbeat row was written")
	require.NoError(t, tb.stop(t))

	log := logs.String()
	require.Contains(t, log, "schema checked; QUEEN_APPLY_SCHEMA=0")
	require.NotContains(t, log, "42501", "no permission error")
	require.NotContains(t, log, "permission denied")
	require.NotContains(t, log, "must be owner")
	require.NotContains(t, log, "index missing", "queen schema creates every index on a fresh database")
	require.NotContains(t, log, `"level":"ERROR"`)
}

// TestApplySchemaOffRefusesMissingSchema boots QUEEN_APPLY_SCHEMA=0 on a database
// without queen's schema: the start fails with the configuration error class (exit
// 78), says what is missing and what to do, and creates nothing.
func TestApplySchemaOffRefusesMissingSchema(t *testing.T) {
	t.Parallel()
	dbURL, _ := emptyDatabase(t)

	err := daemontest.StartError(t, daemontest.Options{DBURL: dbURL, Env: []string{"QUEEN_APPLY_SCHEMA=0"}})
	require.ErrorIs(t, err, daemon.ErrUnsupportedConfig)
	var notApplied *schema.NotAppliedError
	require.ErrorAs(t, err, &notApplied)
	require.True(t, notApplied.Missing)
	for _, want := range []string{"QUEEN_APPLY_SCHEMA=0", "queen.schema_version does not exist",
		"queen schema | psql", "QUEEN_APPLY_SCHEMA=1"} {
		require.Contains(t, err.Error(), want)
	}

	var exists bool
	require.NoError(t, connect(t, dbURL).QueryRow(ctxT(t), `SELECT to_regnamespace('queen') IS NOT NULL`).Scan(&exists))
	require.False(t, exists, "the broker created nothing")
}

// emptyDatabase returns a fresh database without queen's schemas, and its name.
func emptyDatabase(t *testing.T) (dbURL, name string) {
	t.Helper()
	dbURL = pgtest.NewDBURL(t)
	conn := connect(t, dbURL)
	execSQL(t, conn, "DROP SCHEMA queen CASCADE; DROP SCHEMA queen_streams CASCADE")
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	return dbURL, strings.TrimPrefix(u.Path, "/")
}

// connect opens a connection closed when the test ends.
func connect(t *testing.T, dbURL string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctxT(t), dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func execSQL(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	_, err := conn.Exec(ctxT(t), sql)
	require.NoError(t, err, sql)
}

// tempRole creates a role named prefix plus a random suffix (roles belong to the
// whole cluster, which parallel tests share), with its name as its password when
// login, and drops it, with what it owns in this database, if the test passes.
func tempRole(t *testing.T, admin *pgx.Conn, prefix string, login bool) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := prefix + "_" + hex.EncodeToString(b)
	attrs := "NOLOGIN"
	if login {
		attrs = "LOGIN PASSWORD '" + name + "'"
	}
	execSQL(t, admin, "CREATE ROLE "+name+" "+attrs)
	t.Cleanup(func() {
		if t.Failed() {
			return // kept with the database, for a look
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, sql := range []string{"DROP OWNED BY " + name, "DROP ROLE " + name} {
			if _, err := admin.Exec(ctx, sql); err != nil {
				t.Errorf("%s: %v", sql, err)
			}
		}
	})
	return name
}

// applyScript applies `queen schema` output as a DBA does: psql, logged in as the
// superuser of the test URL, acting as owner.
func applyScript(t *testing.T, dbURL, owner string) {
	t.Helper()
	cmd := exec.CommandContext(ctxT(t), psqlPath(t), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dbURL,
		"-c", "SET ROLE "+owner, "-f", "-")
	cmd.Stdin = strings.NewReader(schema.Script())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), "psql: %s", out.String())
}

// psqlPath finds psql where scripts/lib/pg.sh finds the server: PATH, pg_config
// --bindir, the newest Debian or RHEL server directory.
func psqlPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("psql"); err == nil {
		return p
	}
	var cands []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		cands = append(cands, strings.TrimSpace(string(out)))
	}
	for _, pattern := range []string{"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin"} {
		m, _ := filepath.Glob(pattern)
		slices.Sort(m)
		slices.Reverse(m)
		cands = append(cands, m...)
	}
	for _, d := range cands {
		if fi, err := os.Stat(filepath.Join(d, "psql")); err == nil && !fi.IsDir() {
			return filepath.Join(d, "psql")
		}
	}
	t.Fatal("psql not found (PATH, pg_config --bindir, /usr/lib/postgresql/*/bin)")
	return ""
}

// docGrants returns the SQL block of docs/postgresql.md that follows the
// least-privilege-grants marker.
func docGrants(t *testing.T) string {
	t.Helper()
	page, err := os.ReadFile("../../docs/postgresql.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)<!-- least-privilege-grants[^>]*-->\n```sql\n(.*?)```").FindSubmatch(page)
	require.NotNil(t, m, "docs/postgresql.md has no least-privilege-grants block")
	block := string(m[1])
	for _, name := range []string{"queen_owner", "queen_broker", "ON DATABASE queen TO"} {
		require.Contains(t, block, name, "the test substitutes it")
	}
	return block
}
