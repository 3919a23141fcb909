package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
)

// cell is one broker with tenancy on, and a pool on its database.
type cell struct {
	srv *daemontest.Server
	db  *pgxpool.Pool
}

// startCell starts a broker with tenancy on; dbURL "" is a fresh database.
func startCell(t *testing.T, dbURL string) *cell {
	t.Helper()
	srv := daemontest.Start(t, daemontest.Options{DBURL: dbURL, Env: []string{"QUEEN_TENANCY_HEADER=X-Queen-Tenant"}})
	db, err := pgxpool.New(t.Context(), srv.DBURL)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return &cell{srv: srv, db: db}
}

// answer is a read HTTP answer.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) object(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(a.body, &m), "body: %s", a.body)
	return m
}

// call sends one request to the cell as tenant ("" = global).
func (c *cell) call(t *testing.T, tenant, method, path string, body any) answer {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(t, err)
		rd = strings.NewReader(string(raw))
	}
	req, err := http.NewRequestWithContext(t.Context(), method, c.srv.URL+path, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if tenant != "" {
		req.Header.Set("X-Queen-Tenant", tenant)
	}
	resp, err := c.srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: raw}
}

// ok sends a global request that must answer 200 and decodes it.
func (c *cell) ok(t *testing.T, method, path string, body any) map[string]any {
	t.Helper()
	a := c.call(t, "", method, path, body)
	require.Equal(t, http.StatusOK, a.status, "%s %s: %s", method, path, a.body)
	return a.object(t)
}

// push pushes n messages (transaction ids prefix-0 …) to queue/partition as tenant.
func (c *cell) push(t *testing.T, tenant, queueName, partition, prefix string, n int) {
	t.Helper()
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"queue": queueName, "partition": partition,
			"transactionId": fmt.Sprintf("%s-%d", prefix, i), "payload": map[string]any{"i": i, "by": tenant}}
	}
	a := c.call(t, tenant, http.MethodPost, "/api/v1/push", map[string]any{"items": items})
	require.Equal(t, http.StatusCreated, a.status, "push: %s", a.body)
}

// pop pops up to batch messages of queue/partition as tenant, without waiting.
func (c *cell) pop(t *testing.T, tenant, queueName, partition string, batch int) []map[string]any {
	t.Helper()
	a := c.call(t, tenant, http.MethodGet,
		fmt.Sprintf("/api/v1/pop/queue/%s/partition/%s?batch=%d&wait=false", queueName, partition, batch), nil)
	if a.status == http.StatusNoContent {
		return nil
	}
	require.Equal(t, http.StatusOK, a.status, "pop: %s", a.body)
	var res struct {
		Messages []map[string]any `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(a.body, &res))
	return res.Messages
}

// ackAll acks msgs as completed as tenant.
func (c *cell) ackAll(t *testing.T, tenant string, msgs []map[string]any) {
	t.Helper()
	for _, m := range msgs {
		a := c.call(t, tenant, http.MethodPost, "/api/v1/ack", map[string]any{"transactionId": m["transactionId"],
			"partitionId": m["partitionId"], "leaseId": m["leaseId"], "status": "completed"})
		require.Equal(t, http.StatusOK, a.status, "ack: %s", a.body)
		var res []map[string]any
		require.NoError(t, json.Unmarshal(a.body, &res))
		require.Len(t, res, 1)
		require.Equal(t, true, res[0]["success"], "ack: %s", a.body)
	}
}

// tenantTable is a table holding tenant rows, and the SQL condition (on t, $1 the
// prefix, $2 the tenant) that a row is the tenant's; serial tables' ids are ignored.
type tenantTable struct {
	table, owned string
	serial       bool
}

const (
	ownedQueues     = `(SELECT id FROM queen.queues WHERE starts_with(name::text, $1))`
	ownedPartitions = `(SELECT p.id FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE starts_with(q.name::text, $1))`
)

// stateTables are the tables a move carries, messages included.
var stateTables = []tenantTable{
	{table: "queen.queues", owned: `starts_with(t.name::text, $1)`},
	{table: "queen.partitions", owned: `t.queue_id IN ` + ownedQueues},
	{table: "queen.messages", owned: `t.partition_id IN ` + ownedPartitions},
	{table: "queen.partition_consumers", owned: `t.partition_id IN ` + ownedPartitions},
	{table: "queen.partition_lookup", owned: `t.partition_id IN ` + ownedPartitions, serial: true},
	{table: "queen.consumer_groups_metadata", owned: `starts_with(t.consumer_group::text, $1) OR starts_with(t.queue_name::text, $1)`, serial: true},
	{table: "queen.consumer_watermarks", owned: `starts_with(t.queue_name::text, $1)`},
	{table: "queen.queue_consumers", owned: `t.queue_id IN ` + ownedQueues},
	{table: "queen.partition_ready", owned: `t.partition_id IN ` + ownedPartitions},
	{table: "queen.dead_letter_queue", owned: `t.partition_id IN ` + ownedPartitions},
	{table: "queen.message_traces", owned: `t.partition_id IN ` + ownedPartitions},
	{table: "queen.message_trace_names", owned: `t.trace_id IN (SELECT id FROM queen.message_traces WHERE partition_id IN ` + ownedPartitions + `)`},
	{table: "queen.kv_entries", owned: `t.tenant = $2`},
	{table: "queen.message_timers", owned: `starts_with(t.queue_name, $1)`},
	{table: "queen.message_timers_dead", owned: `starts_with(t.queue_name, $1)`},
	{table: "queen_streams.queries", owned: `starts_with(t.source_queue, $1)`},
	{table: "queen_streams.state", owned: `t.query_id IN (SELECT id FROM queen_streams.queries WHERE starts_with(source_queue, $1))`},
	{table: "queen_streams.shards", owned: `t.query_id IN (SELECT id FROM queen_streams.queries WHERE starts_with(source_queue, $1))`},
}

// analyticsTables hold tenant rows a move does not carry, which a drop deletes.
var analyticsTables = []tenantTable{
	{table: "queen.queue_activity", owned: `starts_with(t.queue_name::text, $1)`},
	{table: "queen.queue_lag_metrics", owned: `starts_with(t.queue_name::text, $1)`},
	{table: "queen.consumer_lag_history", owned: `starts_with(t.queue_name, $1)`},
	{table: "queen.tenant_usage", owned: `t.tenant = $2`},
}

// rowsOf returns the tenant's rows of tt as sorted to_jsonb text (serial ids dropped).
func (c *cell) rowsOf(t *testing.T, tt tenantTable, tenant string) []string {
	t.Helper()
	row := "to_jsonb(t)"
	if tt.serial {
		row += " - 'id'"
	}
	rows, err := c.db.Query(t.Context(), fmt.Sprintf(`SELECT (%s)::text FROM %s t WHERE (%s) AND $1::text IS NOT NULL AND $2::text IS NOT NULL ORDER BY 1`,
		row, tt.table, tt.owned), tenant+":", tenant)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}

// exec runs SQL on the cell's database.
func (c *cell) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := c.db.Exec(t.Context(), sql, args...)
	require.NoError(t, err, sql)
}

// seedState writes rows of tenant's in every state table a push and pop do not fill
// (DLQ, traces, KV, timers, streams, group metadata, watermarks), on queue orders.
func (c *cell) seedState(t *testing.T, tenant string) {
	t.Helper()
	q := tenant + ":orders"
	c.exec(t, `UPDATE queen.messages m SET traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate = 'k=v'
        WHERE m.partition_id IN (SELECT p.id FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1)`, q)
	c.exec(t, `INSERT INTO queen.dead_letter_queue (message_id, partition_id, consumer_group, error_message, retry_count)
        SELECT m.id, m.partition_id, $2, 'boom', 3 FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1 ORDER BY m.created_at DESC LIMIT 1`, q, tenant+":g1")
	c.exec(t, `INSERT INTO queen.message_traces (message_id, partition_id, transaction_id, event_type, data)
        SELECT m.id, m.partition_id, m.transaction_id, 'info', '{"step":1}' FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1 ORDER BY m.created_at LIMIT 1`, q)
	c.exec(t, `INSERT INTO queen.message_trace_names (trace_id, trace_name)
        SELECT tr.id, 'checkout' FROM queen.message_traces tr JOIN queen.partitions p ON p.id = tr.partition_id
        JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1`, q)
	c.exec(t, `INSERT INTO queen.kv_entries (tenant, ns, key, value, version, updated_at) VALUES ($1, 'cfg', 'k1', '{"v":1}', 1, now()), ($1, 'cfg', 'k2', '"two"', 2, now())`, tenant)
	c.exec(t, `INSERT INTO queen.message_timers (queue_name, timer_key, partition_name, due_at, txn, payload, message_id)
        VALUES ($1, 'later', 'p1', now() + interval '1 hour', 'tx-timer', '\x7b7d', gen_random_uuid())`, q)
	c.exec(t, `INSERT INTO queen.message_timers_dead (queue_name, timer_key, partition_name, txn, payload, payload_zstd, encrypted, retry_count, error_message, created_at, message_id)
        VALUES ($1, 'dead', 'p1', 'tx-dead', '\x7b7d', false, false, 5, 'gave up', now(), gen_random_uuid())`, q)
	c.exec(t, `INSERT INTO queen.consumer_groups_metadata (consumer_group, queue_name, subscription_mode) VALUES ($1, $2, 'new')`, tenant+":g1", q)
	c.exec(t, `INSERT INTO queen.consumer_watermarks (queue_name, consumer_group) VALUES ($1, '__QUEUE_MODE__')`, q)
	c.exec(t, `INSERT INTO queen_streams.queries (name, source_queue, sink_queue, config_hash) VALUES ($1, $2, $3, 'h')`, tenant+"-agg", q, tenant+":sink")
	c.exec(t, `INSERT INTO queen_streams.state (query_id, partition_id, key, value)
        SELECT s.id, p.id, 'sum', '{"n":3}' FROM queen_streams.queries s, queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
        WHERE s.source_queue = $1 AND q.name = $1`, q)
	c.exec(t, `INSERT INTO queen_streams.shards (query_id, partition_id, cycles)
        SELECT s.id, p.id, 4 FROM queen_streams.queries s, queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
        WHERE s.source_queue = $1 AND q.name = $1`, q)
	c.exec(t, `INSERT INTO queen.queue_activity (bucket_time, queue_name, push_message_count) VALUES (date_trunc('minute', now()), $1, 3)
        ON CONFLICT DO NOTHING`, q)
}

// copyTenant moves tenant's rows from src to dst the way queen-proxy's mover does:
// state structure, message pages of pageSize, then the whole state.
func copyTenant(t *testing.T, src, dst *cell, tenant string, pageSize int) {
	t.Helper()
	state := src.ok(t, http.MethodGet, "/internal/api/tenancy/export/state?tenant="+tenant, nil)
	dst.ok(t, http.MethodPost, "/internal/api/tenancy/import/state", map[string]any{"tenant": tenant, "mode": "structure",
		"queues": state["queues"], "partitions": state["partitions"]})
	var after any
	for range 1000 {
		page := src.ok(t, http.MethodPost, "/internal/api/tenancy/export/messages",
			map[string]any{"tenant": tenant, "after": after, "limit": pageSize})
		if msgs := page["messages"].([]any); len(msgs) > 0 {
			dst.ok(t, http.MethodPost, "/internal/api/tenancy/import/messages", map[string]any{"tenant": tenant, "messages": msgs})
		}
		if after = page["next"]; after == nil {
			break
		}
	}
	state["tenant"], state["mode"] = tenant, "all"
	dst.ok(t, http.MethodPost, "/internal/api/tenancy/import/state", state)
}

// TestTenantMoveCarriesEveryRow: acme's rows in every state table (messages with
// their ids, times, payloads, trace context and flags; cursors; a lease in flight;
// DLQ; options; KV; timers; streams) reach cell 2 exactly, none of bob's does, and
// cell 2 serves acme on: the lease taken at cell 1 acks there, and a pop continues
// after the cursor, redelivering nothing acked and skipping nothing.
func TestTenantMoveCarriesEveryRow(t *testing.T) {
	t.Parallel()
	src, dst := startCell(t, ""), startCell(t, "")
	a := src.call(t, "acme", http.MethodPost, "/api/v1/configure",
		map[string]any{"queue": "orders", "options": map[string]any{"leaseTime": 120, "retryLimit": 7, "priority": 4}})
	require.Equal(t, http.StatusOK, a.status, "configure: %s", a.body)
	src.push(t, "acme", "orders", "p1", "a1", 6)
	src.push(t, "acme", "orders", "p2", "a2", 3)
	src.push(t, "bob", "orders", "p1", "b1", 4)
	src.ackAll(t, "acme", src.pop(t, "acme", "orders", "p1", 2)) // the cursor moves past a1-0, a1-1
	leased := src.pop(t, "acme", "orders", "p1", 2)              // a1-2, a1-3 in flight
	require.Len(t, leased, 2)
	src.seedState(t, "acme")
	src.seedState(t, "bob")

	fence := src.ok(t, http.MethodPost, "/internal/api/tenancy/fence", map[string]any{"tenant": "acme", "fenced": true})
	require.Equal(t, map[string]any{"tenant": "acme", "fenced": true, "drained": true}, fence)
	copyTenant(t, src, dst, "acme", 4)

	for _, tt := range stateTables {
		want := src.rowsOf(t, tt, "acme")
		require.Equal(t, want, dst.rowsOf(t, tt, "acme"), "table %s", tt.table)
		require.Empty(t, dst.rowsOf(t, tt, "bob"), "no row of bob's in %s", tt.table)
		if tt.table != "queen.consumer_groups_metadata" && tt.table != "queen.queue_consumers" && tt.table != "queen.partition_ready" {
			require.NotEmpty(t, want, "the test seeds %s", tt.table)
		}
	}

	dst.ackAll(t, "acme", leased)
	var got []any
	for _, m := range dst.pop(t, "acme", "orders", "p1", 10) {
		got = append(got, m["transactionId"])
	}
	require.Equal(t, []any{"a1-4", "a1-5"}, got, "the pop continues after the cursor and the acked lease")
}

// TestTenantExportPagesAndImportIdempotent: pages of 7 over 100 messages in 5
// partitions return each id once in (partition, created_at, id) order; since starts a
// partition after its entry; importing one page twice stores it once.
func TestTenantExportPagesAndImportIdempotent(t *testing.T) {
	t.Parallel()
	src, dst := startCell(t, ""), startCell(t, "")
	for p := range 5 {
		src.push(t, "acme", "orders", fmt.Sprintf("p%d", p), fmt.Sprintf("m%d", p), 20)
	}
	src.push(t, "bob", "orders", "p0", "b", 5)
	var want []string
	rows, err := src.db.Query(t.Context(), `SELECT m.id::text FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'acme:orders' ORDER BY m.partition_id, m.created_at, m.id`)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		want = append(want, id)
	}
	require.NoError(t, rows.Err())
	require.Len(t, want, 100)

	var got []string
	var pages [][]any
	var after any
	for range 100 {
		page := src.ok(t, http.MethodPost, "/internal/api/tenancy/export/messages", map[string]any{"tenant": "acme", "after": after, "limit": 7})
		msgs := page["messages"].([]any)
		require.LessOrEqual(t, len(msgs), 7)
		for _, m := range msgs {
			got = append(got, m.(map[string]any)["id"].(string))
		}
		pages = append(pages, msgs)
		if after = page["next"]; after == nil {
			break
		}
	}
	require.Equal(t, want, got, "each id once, in order")

	// since: a partition's rows start after its entry; the others are whole.
	first := pages[0][0].(map[string]any)
	tenth := pages[1][2].(map[string]any) // the 10th row, in the first partition
	page := src.ok(t, http.MethodPost, "/internal/api/tenancy/export/messages", map[string]any{"tenant": "acme", "limit": 5000,
		"since": map[string]any{tenth["partition_id"].(string): map[string]any{"createdAt": tenth["created_at"], "id": tenth["id"]}}})
	require.Len(t, page["messages"], 90)
	require.Nil(t, page["next"])
	require.Equal(t, want[10], page["messages"].([]any)[0].(map[string]any)["id"])
	require.Equal(t, first["partition_id"], tenth["partition_id"])

	state := src.ok(t, http.MethodGet, "/internal/api/tenancy/export/state?tenant=acme", nil)
	dst.ok(t, http.MethodPost, "/internal/api/tenancy/import/state", map[string]any{"tenant": "acme", "mode": "structure",
		"queues": state["queues"], "partitions": state["partitions"]})
	for i, want := range []float64{7, 0} {
		got := dst.ok(t, http.MethodPost, "/internal/api/tenancy/import/messages", map[string]any{"tenant": "acme", "messages": pages[0]})
		require.Equal(t, want, got["imported"], "import %d", i)
	}
	require.Len(t, dst.rowsOf(t, stateTables[2], "acme"), 7)
	heads := dst.ok(t, http.MethodGet, "/internal/api/tenancy/export/heads?tenant=acme", nil)["partitions"].([]any)
	require.Len(t, heads, 5)
}

// TestTenantImportPrunesWhatTheSourceLost: a message deleted at the source is pruned
// at the target, and a queue deleted at the source goes with mode all.
func TestTenantImportPrunesWhatTheSourceLost(t *testing.T) {
	t.Parallel()
	src, dst := startCell(t, ""), startCell(t, "")
	src.push(t, "acme", "orders", "p1", "o", 3)
	src.push(t, "acme", "gone", "p1", "g", 2)
	copyTenant(t, src, dst, "acme", 100)

	msgs := src.pop(t, "acme", "orders", "p1", 1)
	require.Len(t, msgs, 1)
	pid, txid := msgs[0]["partitionId"].(string), msgs[0]["transactionId"].(string)
	a := src.call(t, "acme", http.MethodDelete, "/api/v1/messages/"+pid+"/"+txid, nil)
	require.Equal(t, http.StatusOK, a.status, "delete: %s", a.body)
	a = src.call(t, "acme", http.MethodDelete, "/api/v1/resources/queues/gone", nil)
	require.Equal(t, http.StatusOK, a.status, "delete queue: %s", a.body)

	ids := src.ok(t, http.MethodPost, "/internal/api/tenancy/export/ids", map[string]any{"tenant": "acme", "partitionId": pid})["ids"]
	require.Len(t, ids, 2)
	pruned := dst.ok(t, http.MethodPost, "/internal/api/tenancy/import/prune", map[string]any{"tenant": "acme", "partitionId": pid, "keep": ids})
	require.Equal(t, 1.0, pruned["deleted"])
	state := src.ok(t, http.MethodGet, "/internal/api/tenancy/export/state?tenant=acme", nil)
	state["tenant"], state["mode"] = "acme", "all"
	dst.ok(t, http.MethodPost, "/internal/api/tenancy/import/state", state)
	for _, tt := range stateTables[:3] {
		require.Equal(t, src.rowsOf(t, tt, "acme"), dst.rowsOf(t, tt, "acme"), "table %s", tt.table)
	}
	require.Len(t, dst.rowsOf(t, stateTables[0], "acme"), 1, "only orders is left")
}

// TestTenantDropLeavesNothing: drop deletes every row of the tenant in every table
// holding tenant data, and bob's rows stay.
func TestTenantDropLeavesNothing(t *testing.T) {
	t.Parallel()
	c := startCell(t, "")
	for _, tenant := range []string{"acme", "bob"} {
		c.push(t, tenant, "orders", "p1", tenant, 5)
		c.ackAll(t, tenant, c.pop(t, tenant, "orders", "p1", 2))
		c.seedState(t, tenant)
		c.exec(t, `INSERT INTO queen.tenant_usage (tenant, computed_at) VALUES ($1, now())`, tenant)
	}
	bobBefore := map[string][]string{}
	for _, tt := range append(stateTables, analyticsTables...) {
		bobBefore[tt.table] = c.rowsOf(t, tt, "bob")
	}
	c.ok(t, http.MethodPost, "/internal/api/tenancy/fence", map[string]any{"tenant": "acme", "fenced": true})
	out := c.ok(t, http.MethodPost, "/internal/api/tenancy/drop", map[string]any{"tenant": "acme"})
	require.Equal(t, 5.0, out["messagesDeleted"])
	require.Equal(t, 1.0, out["queuesDeleted"])
	for _, tt := range append(stateTables, analyticsTables...) {
		require.Empty(t, c.rowsOf(t, tt, "acme"), "no row of acme's in %s", tt.table)
		require.Equal(t, bobBefore[tt.table], c.rowsOf(t, tt, "bob"), "bob's rows in %s", tt.table)
	}
	var fenced bool
	require.NoError(t, c.db.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM queen.tenant_fences WHERE tenant = 'acme')`).Scan(&fenced))
	require.True(t, fenced, "the fence row stays")
}
