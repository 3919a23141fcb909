package schema_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/httpapi"
	"github.com/queenmq/queen/internal/schema"
	"github.com/queenmq/queen/internal/store"
)

// Ids of the upstream fixture's rows.
const (
	fxP1     = "b0000000-0000-4000-8000-000000000001"
	fxP2     = "b0000000-0000-4000-8000-000000000002"
	fxO1     = "c0000000-0000-4000-8000-000000000001"
	fxTrace1 = "e0000000-0000-4000-8000-000000000001"
)

// apiClient calls a test server's HTTP API.
type apiClient struct {
	t   *testing.T
	srv *httptest.Server
}

// call sends body (nil: none) as JSON and returns the status and the decoded answer.
func (c apiClient) call(method, path string, body any) (int, any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		require.NoError(c.t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.srv.URL+path, rd)
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.srv.Client().Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	var v any
	if len(data) > 0 {
		require.NoError(c.t, json.Unmarshal(data, &v), "%s %s: %s", method, path, data)
	}
	return resp.StatusCode, v
}

// must calls and requires the status.
func (c apiClient) must(method, path string, body any, status int) any {
	c.t.Helper()
	got, v := c.call(method, path, body)
	require.Equal(c.t, status, got, "%s %s answered %v", method, path, v)
	return v
}

// obj and list assert a JSON object and array.
func obj(t *testing.T, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	require.True(t, ok, "not an object: %v", v)
	return m
}

func list(t *testing.T, v any) []any {
	t.Helper()
	a, ok := v.([]any)
	require.True(t, ok, "not an array: %v", v)
	return a
}

// popped returns the messages of a pop answer (none for 204).
func (c apiClient) pop(path string) []map[string]any {
	c.t.Helper()
	status, v := c.call(http.MethodGet, path, nil)
	if status == http.StatusNoContent {
		return nil
	}
	require.Equal(c.t, http.StatusOK, status, "pop %s: %v", path, v)
	var out []map[string]any
	for _, m := range list(c.t, obj(c.t, v)["messages"]) {
		out = append(out, obj(c.t, m))
	}
	return out
}

func txids(msgs []map[string]any) []string {
	out := []string{}
	for _, m := range msgs {
		out = append(out, m["transactionId"].(string))
	}
	return out
}

// ack acknowledges m as completed under leaseID and requires success.
func (c apiClient) ack(m map[string]any, group, leaseID string) {
	c.t.Helper()
	body := map[string]any{"transactionId": m["transactionId"], "partitionId": m["partitionId"],
		"leaseId": leaseID, "status": "completed"}
	if group != "" {
		body["consumerGroup"] = group
	}
	res := list(c.t, c.must(http.MethodPost, "/api/v1/ack", body, http.StatusOK))
	require.Len(c.t, res, 1)
	require.Equal(c.t, true, obj(c.t, res[0])["success"], "ack %v: %v", body, res)
}

// push pushes one item and returns its result.
func (c apiClient) push(queue, partition, txid string) map[string]any {
	c.t.Helper()
	item := map[string]any{"queue": queue, "partition": partition, "transactionId": txid, "payload": map[string]any{"n": 1}}
	res := list(c.t, c.must(http.MethodPost, "/api/v1/push", map[string]any{"items": []any{item}}, http.StatusCreated))
	require.Len(c.t, res, 1)
	return obj(c.t, res[0])
}

// scalar runs a one-value query.
func scalar[T any](t *testing.T, conn *pgx.Conn, sql string, args ...any) T {
	t.Helper()
	var v T
	require.NoError(t, conn.QueryRow(context.Background(), sql, args...).Scan(&v))
	return v
}

// Upstream leaves a partition's retry counter at the retryLimit after a dead letter
// (it resets it only when a batch completes); queen resets it when the cursor moves
// past a failed message. Adoption resets the counters of cursors standing at one of
// their group's dead letters, once: a later apply leaves queen's own counters alone.
func TestAdoptionResetsRetryCountersLeftAtADeadLetter(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	conn := connect(t, upstreamDB(t))
	// billing: its queue-mode cursor stands at b-1, which upstream dead-lettered after
	// three retries. legacy.orders p1: two failures of the message after its cursor.
	_, err := conn.Exec(ctx, `INSERT INTO queen.partition_consumers (partition_id, consumer_group, last_consumed_id,
			last_consumed_created_at, batch_retry_count)
		SELECT m.partition_id, '__QUEUE_MODE__', m.id, m.created_at, 3 FROM queen.messages m WHERE m.transaction_id = 'b-1'`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO queen.dead_letter_queue (message_id, partition_id, consumer_group, error_message, retry_count)
		SELECT m.id, m.partition_id, '__QUEUE_MODE__', 'boom', 3 FROM queen.messages m WHERE m.transaction_id = 'b-1'`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `UPDATE queen.partition_consumers SET batch_retry_count = 2
		WHERE partition_id = $1 AND consumer_group = '__QUEUE_MODE__'`, fxP1)
	require.NoError(t, err)
	counters := func() []int {
		return scalar[[]int](t, conn, `SELECT array_agg(pc.batch_retry_count ORDER BY p.name)
			FROM queen.partition_consumers pc JOIN queen.partitions p ON p.id = pc.partition_id
			WHERE pc.consumer_group = '__QUEUE_MODE__' AND pc.partition_id IN ($1, (SELECT m.partition_id
				FROM queen.messages m WHERE m.transaction_id = 'b-1'))`, fxP1)
	}
	require.Equal(t, []int{3, 2}, counters(), "Default (billing), p1")

	require.NoError(t, schema.Apply(ctx, conn))
	require.Equal(t, []int{0, 2}, counters(), "reset at the dead letter only")

	_, err = conn.Exec(ctx, `UPDATE queen.partition_consumers SET batch_retry_count = 1
		WHERE last_consumed_id = (SELECT id FROM queen.messages WHERE transaction_id = 'b-1')`)
	require.NoError(t, err)
	require.NoError(t, schema.Apply(ctx, conn))
	require.Equal(t, []int{1, 2}, counters(), "once adopted, a counter is queen's own")
}

// TestAdoptAnUpstreamDatabase boots queen on a database an upstream broker wrote and
// serves it: every route works before the builder has made the missing index, the
// upstream state (cursors, a live lease, a subscription, dead letters, traces,
// metrics) is honoured, and afterwards the database is still upstream's.
func TestAdoptAnUpstreamDatabase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := upstreamDB(t)
	conn := connect(t, url)
	indexesOf := func(table string) []string {
		return scalar[[]string](t, conn, `SELECT array_agg(c.relname::text ORDER BY c.relname)
			FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = to_regclass($1)`, table)
	}
	messagesIndexes := indexesOf("queen.messages")
	partitionKeys := `SELECT count(*) FROM pg_constraint
		WHERE conrelid = 'queen.messages'::regclass AND confrelid = 'queen.partitions'::regclass`
	require.Equal(t, 1, scalar[int](t, conn, partitionKeys), "upstream's layout has the foreign key")

	require.NoError(t, schema.Apply(ctx, conn))
	require.Equal(t, messagesIndexes, indexesOf("queen.messages"), "the boot builds no index on messages")
	// The partition rule is kept by queen's triggers instead of the foreign key.
	require.Zero(t, scalar[int](t, conn, partitionKeys))
	require.Equal(t, []string{"queen_message_partition_check", "queen_partition_messages_delete"}, scalar[[]string](t, conn,
		`SELECT array_agg(tgname::text ORDER BY tgname) FROM pg_trigger WHERE tgname LIKE 'queen\_%'`))
	require.Equal(t, 11, scalar[int](t, conn, `SELECT count(*) FROM queen.messages`))
	require.Equal(t, 3600, scalar[int](t, conn, `SELECT ttl FROM queen.queues WHERE name = 'legacy.orders'`))

	st, err := store.Open(store.Options{ConnString: url, MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	b := broker.New(broker.DefaultConfig(), st, testLogger(t))
	srv := httptest.NewServer(httpapi.New(httpapi.Options{}, b, testLogger(t)).Handler())
	t.Cleanup(srv.Close)
	c := apiClient{t: t, srv: srv}

	t.Run("PushDeduplicatesAgainstUpstreamRows", func(t *testing.T) {
		res := c.push("legacy.orders", "p1", "o-1")
		require.Equal(t, "duplicate", res["status"], "%v", res)
		require.Equal(t, fxO1, res["message_id"], "the duplicate carries the stored id")
	})

	t.Run("Configure", func(t *testing.T) {
		c.must(http.MethodPost, "/api/v1/configure",
			map[string]any{"queue": "legacy.config", "options": map[string]any{"leaseTime": 120}}, http.StatusOK)
		require.Equal(t, 120, scalar[int](t, conn, `SELECT lease_time FROM queen.queues WHERE name = 'legacy.config'`))
		c.must(http.MethodPost, "/api/v1/configure", map[string]any{"queue": "fresh.configured"}, http.StatusOK)
	})

	t.Run("PopContinuesFromTheCursor", func(t *testing.T) {
		// Created 100 to 70 minutes ago in queues whose stored ttl is upstream's 3600 s
		// default, which upstream never applies: delivered.
		msgs := c.pop("/api/v1/pop/queue/legacy.orders/partition/p1?batch=10&wait=false")
		require.Equal(t, []string{"o-3", "o-4", "o-5"}, txids(msgs),
			"after the cursor (o-2); if empty, check that a ttl upstream stored is not applied")
		for _, m := range msgs {
			c.ack(m, "", m["leaseId"].(string))
		}
		require.Equal(t, "c0000000-0000-4000-8000-000000000005", scalar[string](t, conn,
			`SELECT last_consumed_id::text FROM queen.partition_consumers
			 WHERE partition_id = $1 AND consumer_group = '__QUEUE_MODE__'`, fxP1))
	})

	t.Run("TheLiveUpstreamLeaseHolds", func(t *testing.T) {
		require.Empty(t, c.pop("/api/v1/pop/queue/legacy.orders/partition/p2?wait=false"), "p2 is leased")
		// The upstream consumer's acks are accepted under its lease: after its batch of
		// two, the partition is free again.
		c.ack(map[string]any{"transactionId": "q-1", "partitionId": fxP2}, "", "upstream-lease-1")
		require.Empty(t, c.pop("/api/v1/pop/queue/legacy.orders/partition/p2?wait=false"), "one of two acked")
		c.ack(map[string]any{"transactionId": "q-2", "partitionId": fxP2}, "", "upstream-lease-1")
		msgs := c.pop("/api/v1/pop/queue/legacy.orders/partition/p2?batch=10&wait=false")
		require.Equal(t, []string{"q-3"}, txids(msgs))
		c.ack(msgs[0], "", msgs[0]["leaseId"].(string))
	})

	t.Run("TheNewModeSubscriptionHolds", func(t *testing.T) {
		// Subscribed 90 minutes ago: o-4 (80 min) but not o-3 (100 min); q-2, q-3 but not q-1 (95 min).
		require.Equal(t, []string{"o-4", "o-5"},
			txids(c.pop("/api/v1/pop/queue/legacy.orders/partition/p1?consumerGroup=analytics&batch=10&wait=false")))
		require.Equal(t, []string{"q-2", "q-3"},
			txids(c.pop("/api/v1/pop/queue/legacy.orders/partition/p2?consumerGroup=analytics&batch=10&wait=false")))
	})

	t.Run("APartitionWithoutItsLookupRow", func(t *testing.T) {
		require.Empty(t, c.pop("/api/v1/pop/queue/legacy.audit?wait=false"),
			"wildcard pops find partitions through partition_lookup")
		// The full pass of the reconcile job's first cycles after a boot (the partition
		// is older than the job's lookback).
		rec, err := st.LookupReconcileBatch(ctx, true, "", 100, time.Now().Add(-time.Minute))
		require.NoError(t, err)
		require.Equal(t, 2, rec.Repaired, "the lookup row, and the ready row of the queue-mode consumer")
		require.Equal(t, []string{"a-1", "a-2"}, txids(c.pop("/api/v1/pop/queue/legacy.audit?batch=10&wait=false")))
		require.Equal(t, []string{"b-1"}, txids(c.pop("/api/v1/pop/queue/billing?batch=10&wait=false")))
	})

	t.Run("DeadLetters", func(t *testing.T) {
		dlq := obj(t, c.must(http.MethodGet, "/api/v1/dlq?queue=legacy.orders", nil, http.StatusOK))
		require.Equal(t, float64(1), dlq["total"])
		m := obj(t, list(t, dlq["messages"])[0])
		require.Equal(t, []any{"o-1", "boom", float64(3)}, []any{m["transactionId"], m["errorMessage"], m["retryCount"]})
	})

	t.Run("Traces", func(t *testing.T) {
		traces := list(t, obj(t, c.must(http.MethodGet, "/api/v1/traces/"+fxP1+"/o-1", nil, http.StatusOK))["traces"])
		require.Len(t, traces, 1)
		tr := obj(t, traces[0])
		require.Equal(t, []any{fxTrace1, "processing", []any{"checkout", "order-1"}},
			[]any{tr["id"], tr["event_type"], tr["trace_names"]})
		c.must(http.MethodPost, "/api/v1/traces", map[string]any{"transactionId": "o-3", "partitionId": fxP1,
			"data": map[string]any{"step": 2}, "traceNames": []string{"checkout"}}, http.StatusCreated)
		byName := obj(t, c.must(http.MethodGet, "/api/v1/traces/by-name/checkout", nil, http.StatusOK))
		require.Equal(t, float64(2), byName["total"])
		names := obj(t, c.must(http.MethodGet, "/api/v1/traces/names", nil, http.StatusOK))
		found := map[string]any{}
		for _, n := range list(t, names["trace_names"]) {
			found[obj(t, n)["trace_name"].(string)] = obj(t, n)["trace_count"]
		}
		require.Equal(t, map[string]any{"checkout": float64(2), "order-1": float64(1)}, found)
	})

	t.Run("StatusAndAnalytics", func(t *testing.T) {
		for _, path := range []string{"/api/v1/status", "/api/v1/status/queues", "/api/v1/status/queues/legacy.orders",
			"/api/v1/status/queues/legacy.orders/messages", "/api/v1/status/analytics", "/api/v1/resources/overview",
			"/api/v1/resources/queues", "/api/v1/resources/queues/legacy.orders", "/api/v1/resources/partitions",
			"/api/v1/resources/namespaces", "/api/v1/consumer-groups", "/api/v1/consumer-groups/analytics",
			"/api/v1/messages?queue=legacy.orders", "/api/v1/analytics/system-metrics",
			"/api/v1/analytics/worker-metrics", "/api/v1/analytics/queue-lag", "/api/v1/analytics/queue-ops",
			"/api/v1/analytics/queue-parked-replicas", "/api/v1/analytics/retention",
			"/api/v1/analytics/postgres-stats", "/metrics"} {
			c.must(http.MethodGet, path, nil, http.StatusOK)
		}
		summaryBefore := scalar[int64](t, conn, `SELECT total_push_requests FROM queen.worker_metrics_summary`)
		_, err := b.Analytics().Flush(ctx)
		require.NoError(t, err, "queen's activity goes to its own tables")
		require.Positive(t, scalar[int64](t, conn,
			`SELECT coalesce(sum(push_request_count), 0) FROM queen.queue_activity WHERE queue_name = 'legacy.orders'`))
		ops := obj(t, c.must(http.MethodGet, "/api/v1/analytics/queue-ops?queue=legacy.orders", nil, http.StatusOK))
		require.NotEmpty(t, list(t, ops["series"]))
		// Upstream's tables keep upstream's rows only.
		require.Equal(t, []int{1, 1, 1}, []int{
			scalar[int](t, conn, `SELECT count(*) FROM queen.worker_metrics`),
			scalar[int](t, conn, `SELECT count(*) FROM queen.system_metrics`),
			scalar[int](t, conn, `SELECT count(*) FROM queen.queue_parked_replica`)})
		require.Equal(t, summaryBefore, scalar[int64](t, conn, `SELECT total_push_requests FROM queen.worker_metrics_summary`))
	})

	t.Run("UpstreamsPartitionTriggersKeepCounting", func(t *testing.T) {
		created := `SELECT coalesce(sum(partitions_created), 0)::int FROM queen.queue_lag_metrics WHERE queue_name = 'legacy.orders'`
		before := scalar[int](t, conn, created)
		require.Equal(t, "queued", c.push("legacy.orders", "p9", "new-partition")["status"])
		require.Equal(t, before+1, scalar[int](t, conn, created), "queen's partition insert ran upstream's trigger")
	})

	t.Run("QueueDeleteRunsUpstreamsDeleteTrigger", func(t *testing.T) {
		status, v := c.call(http.MethodDelete, "/api/v1/resources/queues/legacy.config", nil)
		require.Contains(t, []int{http.StatusOK, http.StatusNoContent}, status, "%v", v)
		require.Positive(t, scalar[int](t, conn, `SELECT coalesce(sum(partitions_deleted), 0)::int
			FROM queen.queue_lag_metrics WHERE queue_name = '__orphaned__'`),
			"the queue is gone when the trigger runs: counted as upstream counts it")
	})

	t.Run("TheBuilderAddsOnlyQueensLookupIndex", func(t *testing.T) {
		actions, err := builder(t, url).Run(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"built idx_messages_partition_transaction_c"}, summary(actions))
		res := c.push("legacy.orders", "p1", "o-2")
		require.Equal(t, []any{"duplicate", "c0000000-0000-4000-8000-000000000002"}, []any{res["status"], res["message_id"]})
	})

	require.Empty(t, upstreamProblems(t, conn), "the database is still upstream's")
	require.Equal(t, 1, scalar[int](t, conn, `SELECT count(*) FROM queen.schema_version WHERE version = $1`, schema.Version()))
}
