package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/store"
)

// streamBundle is a server over a broker with cfg on a new database, plus a pool on
// that database to look at what a cycle left behind.
type streamBundle struct {
	*testBundle
	db *pgxpool.Pool
}

func setupStreams(t *testing.T, opts Options, cfgOpts ...func(*broker.Config)) *streamBundle {
	t.Helper()
	url := pgtest.NewDBURL(t)
	st, err := store.Open(store.Options{ConnString: url, MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	db, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	logger := testLogger(t)
	b := broker.New(brokerConfig(cfgOpts...), st, logger)
	srv := httptest.NewServer(New(opts, b, logger).Handler())
	t.Cleanup(srv.Close)
	return &streamBundle{testBundle: &testBundle{srv: srv, broker: b}, db: db}
}

// postJSON posts v encoded as JSON.
func (b *streamBundle) postJSON(t *testing.T, path string, v any, headers ...string) response {
	t.Helper()
	body, err := json.Marshal(v)
	require.NoError(t, err)
	return b.do(t, http.MethodPost, path, string(body), headers...)
}

// register registers a query and returns its id.
func (b *streamBundle) register(t *testing.T, name, source, sink, hash string) string {
	t.Helper()
	r := b.postJSON(t, "/streams/v1/queries", map[string]any{"name": name, "source_queue": source, "sink_queue": sink, "config_hash": hash})
	requireStatus(t, http.StatusOK, r)
	return r.object(t)["query_id"].(string)
}

// cycle posts a cycle and returns its 200 answer.
func (b *streamBundle) cycle(t *testing.T, c map[string]any, headers ...string) map[string]any {
	t.Helper()
	r := b.postJSON(t, "/streams/v1/cycle", c, headers...)
	requireStatus(t, http.StatusOK, r)
	return r.object(t)
}

// popped is one pop of a partition: its id, lease and message transaction ids.
type popped struct {
	partitionID, leaseID string
	txids                []string
}

// pushAndPop pushes payloads to queueName/partition (transaction ids prefix-0, …) and
// pops them all for group with a lease.
func (b *streamBundle) pushAndPop(t *testing.T, queueName, partition, group, prefix string, n int) popped {
	t.Helper()
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"queue": queueName, "partition": partition, "payload": map[string]any{"i": i},
			"transactionId": fmt.Sprintf("%s-%d", prefix, i)}
	}
	requireStatus(t, http.StatusCreated, b.postJSON(t, "/api/v1/push", map[string]any{"items": items}))
	r := b.get(t, fmt.Sprintf("/api/v1/pop/queue/%s/partition/%s?consumerGroup=%s&batch=%d&wait=false", queueName, partition, group, n))
	requireStatus(t, http.StatusOK, r)
	m := r.object(t)
	p := popped{partitionID: m["partitionId"].(string), leaseID: m["leaseId"].(string)}
	for _, msg := range m["messages"].([]any) {
		p.txids = append(p.txids, msg.(map[string]any)["transactionId"].(string))
	}
	require.Len(t, p.txids, n)
	return p
}

// pushMore pushes one message with transaction id txid to queueName/partition and
// returns txid.
func (b *streamBundle) pushMore(t *testing.T, queueName, partition, txid string) string {
	t.Helper()
	requireStatus(t, http.StatusCreated, b.postJSON(t, "/api/v1/push", map[string]any{"items": []map[string]any{
		{"queue": queueName, "partition": partition, "payload": 1, "transactionId": txid}}}))
	return txid
}

// shardSnapshot is everything a cycle on (query, partition, group) pushing to one sink
// queue can change.
type shardSnapshot struct {
	State  map[string]string // key -> value::text
	Sink   []string          // queue/partition/transaction_id of every message outside the source queue
	Cursor string            // last_consumed_id, total_messages_consumed, worker_id, lease live
	DLQ    int
	Shards int64
}

func (b *streamBundle) snapshot(t *testing.T, queryID, partitionID, group, sink string) shardSnapshot {
	t.Helper()
	ctx := t.Context()
	s := shardSnapshot{State: map[string]string{}}
	rows, err := b.db.Query(ctx, `SELECT key, value::text FROM queen_streams.state WHERE query_id = $1 AND partition_id = $2`, queryID, partitionID)
	require.NoError(t, err)
	for rows.Next() {
		var k, v string
		require.NoError(t, rows.Scan(&k, &v))
		s.State[k] = v
	}
	require.NoError(t, rows.Err())
	require.NoError(t, b.db.QueryRow(ctx, `SELECT coalesce(array_agg(q.name || '/' || p.name || '/' || m.transaction_id ORDER BY m.id), '{}')
		FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
		WHERE q.name = $1`, sink).Scan(&s.Sink))
	err = b.db.QueryRow(ctx, `SELECT concat_ws(' ', last_consumed_id, total_messages_consumed, worker_id, lease_expires_at > now())
		FROM queen.partition_consumers WHERE partition_id = $1 AND consumer_group = $2`, partitionID, group).Scan(&s.Cursor)
	if err != pgx.ErrNoRows {
		require.NoError(t, err)
	}
	require.NoError(t, b.db.QueryRow(ctx, `SELECT count(*) FROM queen.dead_letter_queue WHERE partition_id = $1`, partitionID).Scan(&s.DLQ))
	require.NoError(t, b.db.QueryRow(ctx, `SELECT coalesce(sum(cycles), 0) FROM queen_streams.shards WHERE query_id = $1`, queryID).Scan(&s.Shards))
	return s
}
