package schema_test

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/schema"
	"github.com/queenmq/queen/internal/testlog"
)

// builder returns an index builder for the database at url.
func builder(t *testing.T, url string) *schema.IndexBuilder {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	return &schema.IndexBuilder{ConnConfig: cfg, Logger: testLogger(t), ProgressInterval: -1, RetryInterval: 20 * time.Millisecond}
}

// testLogger logs through t.Log (testlog.Logger, by the name this package's tests use).
func testLogger(t *testing.T) *slog.Logger { return testlog.Logger(t) }

// summary renders actions as "action index" or "action index from", sorted.
func summary(actions []schema.IndexAction) []string {
	out := make([]string, 0, len(actions))
	for _, a := range actions {
		s := a.Action + " " + a.Index
		if a.From != "" {
			s += " " + a.From
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func exec(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	_, err := conn.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

func indexValid(t *testing.T, conn *pgx.Conn, name string) (exists, valid bool) {
	t.Helper()
	err := conn.QueryRow(context.Background(), `SELECT true, indisvalid FROM pg_index
		WHERE indexrelid = to_regclass('queen.' || $1)`, name).Scan(&exists, &valid)
	if err == pgx.ErrNoRows {
		return false, false
	}
	require.NoError(t, err)
	return exists, valid
}

func TestIndexBuilderHasNothingToDoOnADatabaseQueenCreated(t *testing.T) {
	t.Parallel()
	// Every index the builder manages exists on a fresh database with the very same
	// definition (else it would build or report a conflict): the boot's DDL and the
	// builder's list agree.
	url := pgtest.NewDBURL(t)
	actions, err := builder(t, url).Run(t.Context())
	require.NoError(t, err)
	require.Empty(t, summary(actions))
	conn := connect(t, url)
	require.Equal(t, 1, uniqueDedupIndexes(t, conn), "one dedup index on a database queen creates")
	// Every index on messages costs every pushed row an insert: the primary key, the
	// dedup index and the partition's order are all it has.
	rows, err := conn.Query(t.Context(), `SELECT indexrelid::regclass::text FROM pg_index
		WHERE indrelid = 'queen.messages'::regclass ORDER BY 1`)
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"queen.idx_messages_partition_created", "queen.messages_partition_transaction_unique",
		"queen.messages_pkey"}, names)
}

func TestIndexBuilderRebuildsAnIndexLeftInvalid(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.NewDBURL(t)
	conn := connect(t, url)
	exec(t, conn, `DROP INDEX queen.messages_partition_transaction_unique`)

	// A writer's open transaction makes the concurrent build wait; cancelling the run
	// then (a shutdown) cancels the build on the server and leaves the index invalid.
	writer := connect(t, url)
	exec(t, writer, `BEGIN`)
	exec(t, writer, `LOCK TABLE queen.messages IN ROW EXCLUSIVE MODE`)
	runCtx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := builder(t, url).Run(runCtx)
		errc <- err
	}()
	require.Eventually(t, func() bool {
		var waiting bool
		require.NoError(t, conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE application_name = 'queen index builder' AND wait_event_type = 'Lock'
			  AND query LIKE 'CREATE UNIQUE INDEX CONCURRENTLY%')`).Scan(&waiting))
		return waiting
	}, 10*time.Second, 10*time.Millisecond)
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	exec(t, writer, `ROLLBACK`)
	exists, valid := indexValid(t, conn, "messages_partition_transaction_unique")
	require.True(t, exists)
	require.False(t, valid, "an interrupted concurrent build leaves an invalid index")
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = 'queen index builder'`).Scan(&n))
		return n == 0
	}, 10*time.Second, 10*time.Millisecond, "the cancelled builder's session ends (and its lock with it)")

	actions, err := builder(t, url).Run(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"rebuilt messages_partition_transaction_unique"}, summary(actions))
	_, valid = indexValid(t, conn, "messages_partition_transaction_unique")
	require.True(t, valid)
	require.Equal(t, 1, uniqueDedupIndexes(t, conn), "rebuilt byte-wise, and nothing built beside it")
}

func TestIndexBuilderWaitsForTheReplicaHoldingItsLock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.NewDBURL(t)
	conn := connect(t, url)
	exec(t, conn, `DROP INDEX queen.idx_queues_name`)
	other := connect(t, url)
	exec(t, other, `SELECT pg_advisory_lock($1, 2)`, int32(0x51554545))

	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := builder(t, url).Run(short)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	exists, _ := indexValid(t, conn, "idx_queues_name")
	require.False(t, exists, "nothing is built without the lock")

	exec(t, other, `SELECT pg_advisory_unlock($1, 2)`, int32(0x51554545))
	actions, err := builder(t, url).Run(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"built idx_queues_name"}, summary(actions))
}

func TestIndexBuilderNeverBuildsAnEquivalentTwice(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDBURL(t)
	conn := connect(t, url)
	// An operator's index equivalent to one of queen's, and an index under one of
	// queen's names with another definition.
	exec(t, conn, `ALTER INDEX queen.idx_queues_name RENAME TO ops_queues_by_name`)
	exec(t, conn, `DROP INDEX queen.idx_system_state_key`)
	exec(t, conn, `CREATE INDEX idx_system_state_key ON queen.system_state (updated_at)`)

	actions, err := builder(t, url).Run(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{"conflict idx_system_state_key", "equivalent idx_queues_name ops_queues_by_name"},
		summary(actions))
	exists, _ := indexValid(t, conn, "idx_queues_name")
	require.False(t, exists)
}

func TestUpgradeOfADatabaseAnEarlierQueenCreated(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.NewDBURL(t)
	conn := connect(t, url)
	previous, err := os.ReadFile("testdata/queen_previous.sql")
	require.NoError(t, err)
	exec(t, conn, `DROP SCHEMA queen CASCADE; DROP SCHEMA queen_streams CASCADE`)
	exec(t, conn, string(previous))
	exec(t, conn, `
		INSERT INTO queen.queues (id, name) VALUES ('a0000000-0000-4000-8000-000000000001', 'orders');
		INSERT INTO queen.partitions (id, queue_id, name)
		VALUES ('b0000000-0000-4000-8000-000000000001', 'a0000000-0000-4000-8000-000000000001', 'Default');
		INSERT INTO queen.messages (id, transaction_id, partition_id, payload)
		VALUES ('c0000000-0000-4000-8000-000000000001', 't-1', 'b0000000-0000-4000-8000-000000000001', '{}');
		INSERT INTO queen.message_traces (id, message_id, partition_id, transaction_id, data)
		VALUES ('e0000000-0000-4000-8000-000000000001', 'c0000000-0000-4000-8000-000000000001',
		        'b0000000-0000-4000-8000-000000000001', 't-1', '{}');
		INSERT INTO queen.message_trace_names (trace_id, trace_name) VALUES ('e0000000-0000-4000-8000-000000000001', 'flow');
		INSERT INTO queen.queue_lag_metrics (bucket_time, queue_name, pop_count, lag_sum_ms)
		VALUES (date_trunc('minute', now()), 'orders', 4, 1000);
		INSERT INTO queen.worker_metrics (bucket_time, hostname, worker_id, pid, push_request_count)
		VALUES (date_trunc('minute', now()), 'host', 'replica-a', 42, 9);
		INSERT INTO queen.queue_parked_replica (bucket_time, queue_name, hostname, worker_id, parked_count)
		VALUES (date_trunc('minute', now()), 'orders', 'host', 'replica-a', 1.5);
		INSERT INTO queen.system_metrics (bucket_time, hostname, worker_id, pid, sample_count)
		VALUES (date_trunc('minute', now()), 'host', 'replica-a', 42, 60)`)

	// What an upstream broker could not boot on: the check finds it.
	problems := upstreamProblems(t, conn)
	for _, p := range []string{
		"no column queen.system_metrics.timestamp",
		"queen.worker_metrics.worker_id is character varying, upstream's is int",
		"no column queen.worker_metrics.created_at",
		"no index messages_partition_transaction_unique on queen.messages",
		"no table queen.worker_metrics_summary",
	} {
		require.Contains(t, problems, p)
	}

	require.NoError(t, schema.Apply(ctx, conn))
	// queen's rows moved with its tables; upstream's names now hold upstream's layout.
	var lagSum int64
	var parked float64
	var worker string
	require.NoError(t, conn.QueryRow(ctx, `SELECT (SELECT lag_sum_ms FROM queen.queue_activity),
		(SELECT worker_id FROM queen.worker_activity), (SELECT parked_count FROM queen.queue_parked_activity)`).
		Scan(&lagSum, &worker, &parked))
	require.Equal(t, []any{int64(1000), "replica-a", 1.5}, []any{lagSum, worker, parked})
	var systemRows, upstreamRows int
	require.NoError(t, conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM queen.system_activity),
		(SELECT count(*) FROM queen.system_metrics) + (SELECT count(*) FROM queen.worker_metrics)
		+ (SELECT count(*) FROM queen.queue_lag_metrics) + (SELECT count(*) FROM queen.queue_parked_replica)`).
		Scan(&systemRows, &upstreamRows))
	require.Equal(t, []int{1, 0}, []int{systemRows, upstreamRows})
	exists, _ := indexValid(t, conn, "messages_partition_transaction_unique")
	require.False(t, exists, "the boot builds no index on an existing messages table")

	actions, err := builder(t, url).Run(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{
		"built idx_message_trace_names_trace_id",
		"built idx_message_traces_created_at",
		"built idx_message_traces_message_id",
		"built idx_message_traces_partition_id",
		"built idx_message_traces_transaction_partition",
		"built idx_queues_name",
		"built idx_retention_history_partition",
		"built idx_system_state_key",
		"dropped idx_message_traces_message",
		"renamed idx_dlq_message_consumer idx_dlq_message_group",
		"renamed idx_messages_partition_created idx_messages_partition_created_id",
		"renamed idx_partition_consumers_worker_id_active idx_partition_consumers_worker_id",
		"renamed idx_retention_history_executed idx_retention_history_executed_at",
		"renamed messages_partition_transaction_unique idx_messages_partition_transaction_c",
	}, summary(actions))
	require.Equal(t, 1, uniqueDedupIndexes(t, conn), "an earlier queen's byte-wise index is renamed, not doubled")
	require.Empty(t, upstreamProblems(t, conn))
	var onCreated int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_index
		WHERE indrelid = 'queen.messages'::regclass AND pg_get_indexdef(indexrelid) LIKE '%(partition_id, created_at, id)'`).
		Scan(&onCreated))
	require.Equal(t, 1, onCreated, "one index on (partition_id, created_at, id), not two")

	// Applying again (a new version) and building again change nothing.
	exec(t, conn, `DELETE FROM queen.schema_version`)
	require.NoError(t, schema.Apply(ctx, conn))
	again, err := builder(t, url).Run(ctx)
	require.NoError(t, err)
	require.Empty(t, summary(again))
	require.Empty(t, upstreamProblems(t, conn))
}

// uniqueDedupIndexes counts the unique indexes on messages (partition_id, transaction_id)
// that compare byte-wise, and fails when one in another collation exists beside them
// (a database queen created needs only its own).
func uniqueDedupIndexes(t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	var c, other int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT
		count(*) FILTER (WHERE pg_get_indexdef(indexrelid) LIKE '%(partition_id, transaction_id COLLATE "C")'),
		count(*) FILTER (WHERE pg_get_indexdef(indexrelid) LIKE '%(partition_id, transaction_id)')
		FROM pg_index WHERE indrelid = 'queen.messages'::regclass AND indisunique`).Scan(&c, &other))
	require.Zero(t, other, "no dedup index in the database collation")
	return c
}
