package schema_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/schema"
)

// What upstream Queen 0.15's boot and procedures reference, written down from its
// documented layout (never derived from queen's own DDL): an upstream broker booted on
// a database needs every table, column, index name and ON CONFLICT target below.

// upstreamColumns lists, per table, the columns upstream reads or writes and the type
// it declares them with (varchar, text, int, bigint, uuid, tstz, jsonb, bool, numeric).
// Ids upstream never touches (partition_lookup, consumer_groups_metadata,
// retention_history, system_metrics, queue_lag_metrics, worker_metrics) are left out.
var upstreamColumns = map[string]string{
	"queen.queues": `id uuid, name varchar, namespace varchar, task varchar, priority int, lease_time int,
		retry_limit int, retry_delay int, ttl int, delayed_processing int, window_buffer int, retention_seconds int,
		completed_retention_seconds int, max_wait_time_seconds int, max_queue_size int, dead_letter_queue bool,
		dlq_after_max_retries bool, retention_enabled bool, encryption_enabled bool, created_at tstz`,
	"queen.partitions": `id uuid, queue_id uuid, name varchar, created_at tstz, last_activity tstz`,
	"queen.messages": `id uuid, transaction_id varchar, trace_id uuid, partition_id uuid, payload jsonb,
		created_at tstz, is_encrypted bool, producer_sub text`,
	"queen.partition_consumers": `id uuid, partition_id uuid, consumer_group varchar, last_consumed_id uuid,
		last_consumed_created_at tstz, last_consumed_at tstz, lease_expires_at tstz, lease_acquired_at tstz,
		last_stats_update tstz, total_messages_consumed bigint, total_batches_consumed bigint, pending_estimate bigint,
		batch_size int, acked_count int, batch_retry_count int, message_batch jsonb, worker_id varchar, created_at tstz`,
	"queen.partition_lookup": `queue_name varchar, partition_id uuid, last_message_id uuid,
		last_message_created_at tstz, updated_at tstz`,
	"queen.consumer_groups_metadata": `consumer_group text, queue_name text, partition_name text, namespace text,
		task text, subscription_mode text, subscription_timestamp tstz, created_at tstz`,
	"queen.consumer_watermarks": `queue_name varchar, consumer_group varchar, last_empty_scan_at tstz, updated_at tstz`,
	"queen.dead_letter_queue": `id uuid, message_id uuid, partition_id uuid, consumer_group varchar, error_message text,
		retry_count int, original_created_at tstz, failed_at tstz`,
	"queen.message_traces": `id uuid, message_id uuid, partition_id uuid, transaction_id varchar,
		consumer_group varchar, event_type varchar, data jsonb, created_at tstz, worker_id varchar`,
	"queen.message_trace_names": `trace_id uuid, trace_name text`,
	"queen.system_state":        `key text, value jsonb, updated_at tstz`,
	"queen.messages_consumed": `id uuid, partition_id uuid, consumer_group varchar, messages_completed int,
		messages_failed int, acked_at tstz`,
	"queen.retention_history": `partition_id uuid, messages_deleted int, retention_type varchar, executed_at tstz`,
	"queen.system_metrics": `timestamp tstz, hostname text, port int, worker_id text, sample_count int,
		metrics jsonb`,
	"queen.queue_lag_metrics": `bucket_time tstz, queue_name varchar, pop_count bigint, avg_lag_ms bigint,
		max_lag_ms bigint, created_at tstz, push_request_count bigint, push_message_count bigint, pop_empty_count bigint,
		ack_request_count bigint, ack_success_count bigint, ack_failed_count bigint, transaction_count bigint,
		partitions_created int, partitions_deleted int, partition_count int, parked_count int`,
	"queen.worker_metrics": `hostname varchar, worker_id int, pid int, bucket_time tstz, avg_event_loop_lag_ms int,
		max_event_loop_lag_ms int, avg_free_slots int, min_free_slots int, db_connections int, avg_job_queue_size int,
		max_job_queue_size int, backoff_size int, jobs_done bigint, push_request_count bigint, pop_request_count bigint,
		ack_request_count bigint, transaction_count bigint, push_message_count bigint, pop_message_count bigint,
		ack_message_count bigint, ack_success_count bigint, ack_failed_count bigint, lag_count bigint,
		avg_lag_ms bigint, max_lag_ms bigint, db_error_count bigint, dlq_count bigint, created_at tstz`,
	"queen.worker_metrics_summary": `id int, total_push_requests bigint, total_pop_requests bigint,
		total_ack_requests bigint, total_transactions bigint, total_push_messages bigint, total_pop_messages bigint,
		total_ack_messages bigint, total_ack_success bigint, total_ack_failed bigint, total_db_errors bigint,
		total_dlq bigint, last_updated_at tstz`,
	"queen.queue_parked_replica": `bucket_time tstz, queue_name varchar, hostname varchar, worker_id int,
		parked_count int`,
	"queen.stats": `stat_type varchar, stat_key varchar, queue_id uuid, partition_id uuid, consumer_group varchar,
		child_count int, total_messages bigint, pending_messages bigint, processing_messages bigint,
		completed_messages bigint, dead_letter_messages bigint, oldest_pending_at tstz, newest_message_at tstz,
		prev_snapshot_at tstz, last_scanned_at tstz, avg_lag_seconds int, max_lag_seconds int, median_lag_seconds int,
		avg_offset_lag int, max_offset_lag int, ingested_per_second numeric, processed_per_second numeric,
		prev_total_messages bigint, prev_completed_messages bigint, last_scanned_message_id uuid,
		last_computed_at tstz`,
	"queen.stats_history": `stat_type varchar, stat_key varchar, bucket_time tstz, total_messages bigint,
		pending_messages bigint, processing_messages bigint, completed_messages bigint, dead_letter_messages bigint,
		messages_ingested int, messages_processed int, max_lag_seconds int`,
	"queen_streams.queries": `id uuid, name text, source_queue text, sink_queue text, config_hash text,
		created_at tstz, updated_at tstz`,
	"queen_streams.state": `query_id uuid, partition_id uuid, key text, value jsonb, updated_at tstz`,
}

// compatibleTypes are the column types (format_type) upstream's statements accept for
// each declared type: its values are assigned and compared without error.
var compatibleTypes = map[string][]string{
	"uuid":    {"uuid"},
	"varchar": {"character varying", "text"},
	"text":    {"text", "character varying"},
	"int":     {"integer", "bigint"},
	"bigint":  {"bigint", "integer"},
	"tstz":    {"timestamp with time zone"},
	"jsonb":   {"jsonb"},
	"bool":    {"boolean"},
	"numeric": {"numeric"},
}

// upstreamIndexNames are the index (and constraint) names upstream's boot creates by
// name, per table: create-if-missing checks only the name, and a missing one is built
// inside upstream's boot transaction.
var upstreamIndexNames = map[string][]string{
	"queen.queues":                   {"queues_name_key", "idx_queues_name"},
	"queen.partitions":               {"partitions_queue_id_name_key"},
	"queen.messages":                 {"messages_partition_transaction_unique", "idx_messages_partition_created"},
	"queen.partition_consumers":      {"idx_partition_consumers_worker_id_active"},
	"queen.partition_lookup":         {"idx_partition_lookup_partition_id"},
	"queen.consumer_groups_metadata": {"idx_consumer_groups_metadata_lookup"},
	"queen.dead_letter_queue": {"idx_dlq_partition", "idx_dlq_consumer_group", "idx_dlq_failed_at",
		"idx_dlq_message_consumer"},
	"queen.message_traces": {"idx_message_traces_message_id", "idx_message_traces_transaction_partition",
		"idx_message_traces_created_at", "idx_message_traces_partition_id"},
	"queen.message_trace_names": {"idx_message_trace_names_name", "idx_message_trace_names_trace_id"},
	"queen.system_state":        {"idx_system_state_key"},
	"queen.messages_consumed": {"idx_messages_consumed_acked_at", "idx_messages_consumed_partition_acked",
		"idx_messages_consumed_consumer_acked", "idx_messages_consumed_partition_id"},
	"queen.retention_history": {"idx_retention_history_partition", "idx_retention_history_executed"},
	"queen.system_metrics": {"unique_metric_per_replica", "idx_system_metrics_timestamp", "idx_system_metrics_replica",
		"idx_system_metrics_worker", "idx_system_metrics_metrics"},
	"queen.queue_lag_metrics":    {"idx_queue_lag_bucket", "idx_queue_lag_queue"},
	"queen.worker_metrics":       {"idx_worker_metrics_bucket", "idx_worker_metrics_worker", "idx_worker_metrics_created"},
	"queen.queue_parked_replica": {"idx_queue_parked_replica_bucket", "idx_queue_parked_replica_queue"},
	"queen.stats":                {"idx_stats_type", "idx_stats_queue_id", "idx_stats_partition_id", "idx_stats_computed"},
	"queen.stats_history":        {"idx_stats_history_time", "idx_stats_history_lookup"},
	"queen_streams.state":        {"idx_streams_state_updated_at"},
}

// upstreamConflictTargets are upstream's ON CONFLICT column lists: each needs a valid,
// non-partial unique index on exactly these columns (any order or collation).
var upstreamConflictTargets = map[string][]string{
	"queen.queues":                   {"name"},
	"queen.partitions":               {"queue_id", "name"},
	"queen.messages":                 {"partition_id", "transaction_id"},
	"queen.partition_consumers":      {"partition_id", "consumer_group"},
	"queen.partition_lookup":         {"queue_name", "partition_id"},
	"queen.consumer_groups_metadata": {"consumer_group", "queue_name", "partition_name", "namespace", "task"},
	"queen.consumer_watermarks":      {"queue_name", "consumer_group"},
	"queen.system_state":             {"key"},
	"queen.message_trace_names":      {"trace_id", "trace_name"},
	"queen.stats":                    {"stat_type", "stat_key"},
	"queen.queue_lag_metrics":        {"bucket_time", "queue_name"},
	"queen.worker_metrics":           {"hostname", "worker_id", "pid", "bucket_time"},
	"queen.worker_metrics_summary":   {"id"},
	"queen.queue_parked_replica":     {"bucket_time", "queue_name", "hostname", "worker_id"},
	"queen.system_metrics":           {"timestamp", "hostname", "port", "worker_id"},
	"queen_streams.queries":          {"name"},
	"queen_streams.state":            {"query_id", "partition_id", "key"},
}

// upstreamFunctions are the names of upstream's functions (and those its server calls):
// queen must define none of them, in any shape, or upstream's calls become ambiguous
// or its create-or-replace fails.
var upstreamFunctions = strings.Fields(`
	push_messages_v2 push_messages_v3 pop_specific_batch pop_discover_batch pop_unified_batch
	pop_unified_batch_v2 pop_unified_batch_v3 pop_unified_batch_v4 pop_unified_batch_v2_noorder
	ack_messages_v2 execute_transaction_v2 renew_lease_v2 record_trace_v1 streams_register_query_v1
	streams_cycle_v1 streams_state_get_v1 update_partition_lookup_v1 reconcile_partition_lookup_v1
	has_pending_messages is_stats_leader configure_queue_v1 delete_queue_v1 get_queue_v2 get_queue_detail_v2
	get_consumer_group_details_v1 update_consumer_group_subscription_v1 seek_partition_v1
	get_consumer_groups_v1 get_consumer_groups_v2 get_consumer_groups_v3 get_consumer_groups_v4
	get_namespaces_v2 get_tasks_v2 get_queues_v2 get_system_overview_v3 get_system_totals_v1
	get_postgres_stats_v1 get_prometheus_metrics_v1 increment_message_counts_v1 aggregate_queue_stats_v1
	aggregate_queue_stats_v2 aggregate_namespace_stats_v1 aggregate_task_stats_v1 aggregate_system_stats_v1
	aggregate_system_stats_v2 cleanup_orphaned_stats_v1 cleanup_orphaned_stats_v2 get_analytics_v1
	get_system_metrics_v1 list_messages_v1 get_dlq_messages_v1 get_status_v3 get_worker_metrics_timeseries_v1
	get_queue_ops_v1 get_queue_parked_per_replica_v1 get_retention_timeseries_v1 get_status_queues_v2
	get_queue_messages_v1 get_traces_by_name_v1 get_available_trace_names_v1 get_message_v1 delete_message_v1
	get_message_traces_v1 get_lagging_partitions_v1 cleanup_worker_metrics_v1 compute_partition_stats_v1
	compute_partition_stats_v2 compute_partition_stats_v3 refresh_all_stats_v1 delete_consumer_group_v1
	delete_consumer_group_for_queue_v1 seek_consumer_group_v1 get_worker_throughput_v1 get_queue_lag_v1
	get_worker_health_v1 update_partition_lookup_trigger update_worker_metrics_summary
	bump_partitions_created_trigger bump_partitions_deleted_trigger write_stats_history_v1
	cleanup_stats_history_v1 pop_messages_batch_v2`)

// upstreamDroppedNames are names upstream's boot drops every time: an object of queen's
// under one of them would be dropped by an upstream broker.
var upstreamDroppedNames = []string{"idx_messages_transaction_id", "idx_messages_txn_partition",
	"trg_update_partition_lookup", "trg_partitions_created_counter", "trg_partitions_deleted_counter",
	"trg_update_worker_metrics_summary"}

// upstreamProblems lists what the database lacks of what upstream's boot and
// procedures reference: tables, columns of a compatible type, index names, unique
// indexes for the ON CONFLICT targets, the summary row; and columns of those tables
// that upstream's inserts cannot leave out (NOT NULL without a default).
func upstreamProblems(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	ctx := context.Background()
	var problems []string
	for _, table := range slices.Sorted(maps.Keys(upstreamColumns)) {
		type column struct {
			typ             string
			notNull, hasDef bool
		}
		cols := map[string]column{}
		rows, err := conn.Query(ctx, `SELECT a.attname::text, format_type(a.atttypid, NULL), a.attnotnull, a.atthasdef
			FROM pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`, table)
		require.NoError(t, err)
		var name, typ string
		var notNull, hasDef bool
		_, err = pgx.ForEachRow(rows, []any{&name, &typ, &notNull, &hasDef}, func() error {
			cols[name] = column{typ, notNull, hasDef}
			return nil
		})
		require.NoError(t, err)
		if len(cols) == 0 {
			problems = append(problems, "no table "+table)
			continue
		}
		used := map[string]bool{}
		for _, decl := range strings.Split(upstreamColumns[table], ",") {
			f := strings.Fields(decl)
			require.Len(t, f, 2, "bad column spec %q", decl)
			used[f[0]] = true
			switch col, ok := cols[f[0]]; {
			case !ok:
				problems = append(problems, fmt.Sprintf("no column %s.%s", table, f[0]))
			case !slices.Contains(compatibleTypes[f[1]], col.typ):
				problems = append(problems, fmt.Sprintf("%s.%s is %s, upstream's is %s", table, f[0], col.typ, f[1]))
			}
		}
		for _, name := range slices.Sorted(maps.Keys(cols)) {
			if col := cols[name]; !used[name] && col.notNull && !col.hasDef {
				problems = append(problems, fmt.Sprintf("%s.%s is NOT NULL without a default", table, name))
			}
		}
	}
	for _, table := range slices.Sorted(maps.Keys(upstreamIndexNames)) {
		nsp := strings.SplitN(table, ".", 2)[0]
		for _, name := range upstreamIndexNames[table] {
			var ok bool
			require.NoError(t, conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_index
				WHERE indexrelid = to_regclass($1) AND indrelid = to_regclass($2) AND indisvalid)`,
				nsp+"."+name, table).Scan(&ok))
			if !ok {
				problems = append(problems, fmt.Sprintf("no index %s on %s", name, table))
			}
		}
	}
	for _, table := range slices.Sorted(maps.Keys(upstreamConflictTargets)) {
		want := slices.Sorted(slices.Values(upstreamConflictTargets[table]))
		var ok bool
		require.NoError(t, conn.QueryRow(ctx, `SELECT EXISTS (
			SELECT 1 FROM pg_index i
			WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indisvalid
			  AND i.indpred IS NULL AND i.indexprs IS NULL
			  AND (SELECT array_agg(a.attname::text ORDER BY a.attname::text)
			       FROM unnest(i.indkey::int2[]) k JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k)
			      = $2::text[])`, table, want).Scan(&ok))
		if !ok {
			problems = append(problems, fmt.Sprintf("no unique index on %s %v", table, want))
		}
	}
	var summary int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM queen.worker_metrics_summary WHERE id = 1`).Scan(&summary); err != nil || summary != 1 {
		problems = append(problems, "no worker_metrics_summary row 1")
	}
	return problems
}

// queenFunctionNames returns the functions queen's schema files define.
func queenFunctionNames() []string {
	re := regexp.MustCompile(`(?i)CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(?:\w+\.)?(\w+)\s*\(`)
	var names []string
	for _, m := range re.FindAllStringSubmatch(schema.SQL(), -1) {
		names = append(names, strings.ToLower(m[1]))
	}
	return names
}

// upstreamDB returns a new database holding upstream's fixture and nothing of queen's.
func upstreamDB(t *testing.T) string {
	t.Helper()
	url := pgtest.NewDBURL(t)
	fixture, err := os.ReadFile("testdata/upstream_0_15.sql")
	require.NoError(t, err)
	conn := connect(t, url)
	_, err = conn.Exec(context.Background(), `DROP SCHEMA queen CASCADE; DROP SCHEMA queen_streams CASCADE`)
	require.NoError(t, err)
	_, err = conn.Exec(context.Background(), string(fixture))
	require.NoError(t, err)
	return url
}

// connect opens a session closed when the test ends.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func TestQueenDefinesNoUpstreamName(t *testing.T) {
	t.Parallel()
	names := queenFunctionNames()
	require.Greater(t, len(names), 20, "the function definitions are found")
	for _, name := range names {
		require.NotContains(t, upstreamFunctions, name, "queen defines upstream's function %s", name)
	}
	sql := strings.ToLower(schema.SQL())
	// Upstream drops and re-creates its triggers by name at every boot: queen's carry a
	// prefix of their own.
	triggers := regexp.MustCompile(`create (?:or replace )?trigger\s+(\S+)`).FindAllStringSubmatch(sql, -1)
	require.Len(t, triggers, 2, "queen's triggers: the partition check on messages and its cascade")
	for _, m := range triggers {
		require.True(t, strings.HasPrefix(m[1], "queen_"), "trigger %s is named apart from upstream's", m[1])
	}
	for _, name := range upstreamDroppedNames {
		require.NotContains(t, sql, name, "upstream drops %s at every boot", name)
	}

	// The same on a database: no function of queen's in either schema has an upstream name.
	conn := connect(t, pgtest.NewDBURL(t))
	var clash []string
	require.NoError(t, conn.QueryRow(context.Background(), `SELECT coalesce(array_agg(p.proname::text), '{}')
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname IN ('queen', 'queen_streams') AND p.proname = ANY ($1)`, upstreamFunctions).Scan(&clash))
	require.Empty(t, clash)
}

func TestADatabaseQueenCreatedStaysUpstreamBootable(t *testing.T) {
	t.Parallel()
	conn := connect(t, pgtest.NewDBURL(t))
	require.Empty(t, upstreamProblems(t, conn))
}

func TestTheUpstreamFixtureHasEverythingUpstreamReferences(t *testing.T) {
	t.Parallel()
	// The check itself is checked: the fixture, written from upstream's layout, passes.
	conn := connect(t, upstreamDB(t))
	require.Empty(t, upstreamProblems(t, conn))
}
