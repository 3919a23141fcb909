package httpapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/store"
)

// dlqEntries lists the dead-letter entries of queueName.
func (b *testBundle) dlqEntries(t *testing.T, queueName string) []map[string]any {
	t.Helper()
	return rows(t, b.list(t, "/api/v1/dlq?queue="+queueName), "messages")
}

// partitionTxs lists the transaction ids stored in (queueName, partition), oldest first.
func (b *adminBundle) partitionTxs(t *testing.T, queueName, partition string) []string {
	t.Helper()
	rs, err := b.db.Query(t.Context(), `SELECT m.transaction_id FROM queen.messages m
JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
WHERE q.name = $1 AND p.name = $2 ORDER BY m.created_at, m.id`, queueName, partition)
	require.NoError(t, err)
	defer rs.Close()
	var out []string
	for rs.Next() {
		var tx string
		require.NoError(t, rs.Scan(&tx))
		out = append(out, tx)
	}
	require.NoError(t, rs.Err())
	return out
}

// TestMessageRetryMoves: retry moves the newest dead-letter entry of the message back
// to the end of its partition as "dlq:<entry id>" and deletes that entry only.
func TestMessageRetryMoves(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	pid := b.deadLetter(t, "mv-q", "p", "t-r", "g1", `{"r":1}`)
	b.ack(t, b.popPartition(t, "mv-q", "p", "g2", 1)[0], "g2", "dlq", "also")
	entries := b.dlqEntries(t, "mv-q")
	require.Len(t, entries, 2)
	newest := entries[0] // newest failure first: g2's
	require.Equal(t, "g2", newest["consumerGroup"])
	dlqID := newest["dlqId"].(string)

	r := b.post(t, "/api/v1/messages/"+pid+"/t-r/retry", "{}")
	requireStatus(t, http.StatusOK, r)
	m := r.object(t)
	replayed := m["replayedAs"].(map[string]any)
	require.Equal(t, map[string]any{"success": true, "result": "moved", "queue": "mv-q", "partition": "p",
		"consumerGroup": "g2", "dlqId": dlqID, "originalTransactionId": "t-r", "dlqRowRemoved": true,
		"replayedAs": map[string]any{"index": 0.0, "message_id": replayed["message_id"], "transaction_id": "dlq:" + dlqID,
			"queueName": "mv-q", "status": "queued"}}, m)
	require.NotEqual(t, zeroUUID, replayed["message_id"])
	require.Equal(t, []string{"t-r", "dlq:" + dlqID}, b.partitionTxs(t, "mv-q", "p"), "pushed to the tail")
	left := b.dlqEntries(t, "mv-q")
	require.Len(t, left, 1)
	require.Equal(t, "g1", left[0]["consumerGroup"], "the other group's entry survives")

	got := b.popUpTo(t, "mv-q", "p", "g1", 10)
	require.Equal(t, []any{"dlq:" + dlqID}, field(got, "transactionId"), "g1's cursor is past t-r: only the moved copy")
	require.Equal(t, map[string]any{"r": float64(1)}, got[0]["data"])

	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/messages/"+pid+"/t-r/retry", ""))
	require.Empty(t, b.dlqEntries(t, "mv-q"))

	for _, path := range []string{
		"/api/v1/messages/" + pid + "/t-r/retry",                          // no entry left
		"/api/v1/messages/" + pid + "/nope/retry",                         // no such message
		"/api/v1/messages/not-a-uuid/t-r/retry",                           // no such partition
		"/api/v1/messages/0195e7a0-0000-7000-8000-000000000000/t-r/retry", // unknown partition
	} {
		r := b.post(t, path, "")
		requireStatus(t, http.StatusNotFound, r)
		m := r.object(t)
		require.Equal(t, []any{false, "Message not found"}, []any{m["success"], m["error"]}, path)
		require.Contains(t, m, "partitionId")
		require.Contains(t, m, "transactionId")
		require.NotEmpty(t, m["message"])
	}
}

// TestDLQReplay: replay moves one entry by id, optionally elsewhere; a move already
// made is a duplicate that keeps the entry; pushes paused is 503.
func TestDLQReplay(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	b.deadLetter(t, "rp-q", "p", "t-1", "", `1`)
	b.deadLetter(t, "rp-q", "p", "t-2", "", `2`)
	b.deadLetter(t, "rp-q", "p", "t-3", "", `3`)
	ids := map[string]string{}
	for _, e := range b.dlqEntries(t, "rp-q") {
		ids[e["transactionId"].(string)] = e["dlqId"].(string)
	}

	t.Run("Redirected", func(t *testing.T) {
		r := b.post(t, "/api/v1/dlq/"+ids["t-1"]+"/replay", `{"queue":" rp-other ","partition":"x"}`)
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, []any{"moved", "rp-other", "x", true}, []any{m["result"], m["queue"], m["partition"], m["dlqRowRemoved"]})
		require.Equal(t, []string{"dlq:" + ids["t-1"]}, b.partitionTxs(t, "rp-other", "x"), "a missing destination is created")

		r = b.post(t, "/api/v1/dlq/"+ids["t-1"]+"/replay", "")
		requireStatus(t, http.StatusNotFound, r)
		require.Equal(t, map[string]any{"success": false, "result": "gone", "dlqId": ids["t-1"], "error": "Message not found",
			"message": r.object(t)["message"]}, r.object(t))
	})

	t.Run("Duplicate", func(t *testing.T) {
		b.pushed(t, "rp-q", "p", "dlq:"+ids["t-2"], `"already"`)
		r := b.post(t, "/api/v1/dlq/"+ids["t-2"]+"/replay", "{}")
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, []any{true, "duplicate", false}, []any{m["success"], m["result"], m["dlqRowRemoved"]})
		require.Equal(t, map[string]any{"index": 0.0, "message_id": zeroUUID, "transaction_id": "dlq:" + ids["t-2"],
			"queueName": "rp-q", "status": "duplicate"}, m["replayedAs"])
		require.Len(t, b.dlqEntries(t, "rp-q"), 2, "the entry is kept")
	})

	t.Run("PushMaintenance", func(t *testing.T) {
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/system/maintenance", `{"enabled":true}`))
		r := b.post(t, "/api/v1/dlq/"+ids["t-3"]+"/replay", "")
		requireStatus(t, http.StatusServiceUnavailable, r)
		m := r.object(t)
		require.Equal(t, []any{false, "maintenance", false}, []any{m["success"], m["result"], m["dlqRowRemoved"]})
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/system/maintenance", `{"enabled":false}`))
		require.Len(t, b.dlqEntries(t, "rp-q"), 2, "nothing moved")
	})

	t.Run("BadInput", func(t *testing.T) {
		requireError(t, b.post(t, "/api/v1/dlq/"+ids["t-3"]+"/replay", `{"queue":"  "}`), http.StatusBadRequest,
			"invalid_argument", "queue must not be blank", "queue")
		requireError(t, b.post(t, "/api/v1/dlq/"+ids["t-3"]+"/replay", `{"partition":5}`), http.StatusBadRequest,
			"invalid_argument", "partition must be a string", "partition")
		for _, id := range []string{"nope", "0195e7a0-0000-7000-8000-000000000000"} {
			r := b.post(t, "/api/v1/dlq/"+id+"/replay", "")
			requireStatus(t, http.StatusNotFound, r)
			require.Equal(t, "gone", r.object(t)["result"])
		}
	})

	t.Run("ByListedMessageID", func(t *testing.T) {
		var msgID string
		for _, e := range b.dlqEntries(t, "rp-q") {
			if e["transactionId"] == "t-3" {
				msgID = e["id"].(string)
			}
		}
		r := b.post(t, "/api/v1/dlq/"+msgID+"/replay", "")
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, ids["t-3"], r.object(t)["dlqId"], "the list's id (the message's) names its newest entry")
	})
}

// TestDLQMoveWithoutDatabase: a move the database cannot be reached for is a 503 with
// Retry-After in the move's own shape, nothing removed: not the 500 of a refusal.
func TestDLQMoveWithoutDatabase(t *testing.T) {
	t.Parallel()
	st, err := store.Open(store.Options{ConnString: "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1"})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	b := start(t, Options{}, st)
	for _, r := range []response{
		b.post(t, "/api/v1/dlq/00000000-0000-0000-0000-000000000001/replay", ``),
		b.post(t, "/api/v1/messages/00000000-0000-0000-0000-000000000001/tx-1/retry", `{}`),
	} {
		requireStatus(t, http.StatusServiceUnavailable, r)
		require.Equal(t, "1", r.header.Get("Retry-After"))
		require.JSONEq(t, `{"success":false,"result":"failed","dlqRowRemoved":false,"error":"dlq move failed: database unavailable"}`,
			string(r.body))
	}
}
