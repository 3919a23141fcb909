package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

func TestStreamQueries(t *testing.T) {
	t.Parallel()
	b := setupStreams(t, Options{})

	t.Run("FreshThenResumed", func(t *testing.T) {
		t.Parallel()
		r := b.postJSON(t, "/streams/v1/queries", map[string]any{"name": "q.fresh", "source_queue": "src-a", "sink_queue": "sink-a", "config_hash": "h1"})
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, sortedKeys("success", "query_id", "name", "config_hash", "fresh", "reset"), keys(m))
		require.Equal(t, true, m["fresh"])
		require.Equal(t, false, m["reset"])
		require.Equal(t, "q.fresh", m["name"])
		id := m["query_id"].(string)
		require.True(t, queue.IsUUID(id))

		// Same hash: resumed, source and sink updated.
		r = b.postJSON(t, "/streams/v1/queries", map[string]any{"name": "q.fresh", "source_queue": "src-b", "config_hash": "h1"})
		requireStatus(t, http.StatusOK, r)
		m = r.object(t)
		require.Equal(t, false, m["fresh"])
		require.Equal(t, id, m["query_id"])
		var source string
		var sink *string
		require.NoError(t, b.db.QueryRow(t.Context(), `SELECT source_queue, sink_queue FROM queen_streams.queries WHERE id = $1`, id).Scan(&source, &sink))
		require.Equal(t, "src-b", source)
		require.Nil(t, sink)
	})

	t.Run("MismatchIs409AndChangesNothing", func(t *testing.T) {
		t.Parallel()
		id := b.register(t, "q.mismatch", "src-m", "", "h1")
		seedState(t, b, id, "k")
		r := b.postJSON(t, "/streams/v1/queries", map[string]any{"name": "q.mismatch", "source_queue": "src-m", "config_hash": "h2"})
		requireStatus(t, http.StatusConflict, r)
		m := r.object(t)
		require.Equal(t, false, m["success"])
		require.Equal(t, id, m["query_id"])
		require.Equal(t, "q.mismatch", m["name"])
		require.True(t, strings.HasPrefix(m["error"].(string), "config_hash mismatch: "), m["error"])
		require.Equal(t, 1, stateRows(t, b, id), "state kept")
		var hash string
		require.NoError(t, b.db.QueryRow(t.Context(), `SELECT config_hash FROM queen_streams.queries WHERE id = $1`, id).Scan(&hash))
		require.Equal(t, "h1", hash)
	})

	t.Run("ResetWipesState", func(t *testing.T) {
		t.Parallel()
		id := b.register(t, "q.reset", "src-r", "", "h1")
		seedState(t, b, id, "k1", "k2")
		r := b.postJSON(t, "/streams/v1/queries", map[string]any{"name": "q.reset", "source_queue": "src-r", "config_hash": "h2", "reset": true})
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, true, m["reset"])
		require.Equal(t, false, m["fresh"])
		require.Equal(t, "h2", m["config_hash"])
		require.Equal(t, id, m["query_id"])
		require.Equal(t, 0, stateRows(t, b, id))

		// reset:true with the hash already stored changes nothing.
		seedState(t, b, id, "k3")
		r = b.postJSON(t, "/streams/v1/queries", map[string]any{"name": "q.reset", "source_queue": "src-r", "config_hash": "h2", "reset": true})
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, false, r.object(t)["reset"])
		require.Equal(t, 1, stateRows(t, b, id))
	})

	t.Run("Validation", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ name, body, msg, field string }{
			{"NotAnObject", `[1]`, "request body must be a JSON object", ""},
			{"Empty", ``, "Empty request body", ""},
			{"NameMissing", `{"source_queue":"s","config_hash":"h"}`, "name is required", "name"},
			{"NameEmpty", `{"name":"","source_queue":"s","config_hash":"h"}`, "name is required", "name"},
			{"NameNotString", `{"name":1,"source_queue":"s","config_hash":"h"}`, "name must be a string", "name"},
			{"SourceMissing", `{"name":"n","config_hash":"h"}`, "source_queue is required", "source_queue"},
			{"HashMissing", `{"name":"n","source_queue":"s"}`, "config_hash is required", "config_hash"},
			{"SinkNotString", `{"name":"n","source_queue":"s","config_hash":"h","sink_queue":5}`, "sink_queue must be a string", "sink_queue"},
			{"ResetNotBool", `{"name":"n","source_queue":"s","config_hash":"h","reset":"yes"}`, "reset must be a boolean", "reset"},
			{"NULInName", `{"name":"a\u0000b","source_queue":"s","config_hash":"h"}`, "name must be valid UTF-8 without NUL characters", "name"},
			// Two names or hashes that decode to the same U+FFFD would be one query.
			{"SurrogateInName", `{"name":"z\ud800","source_queue":"s","config_hash":"h"}`,
				"name must not hold U+FFFD (bytes that are not UTF-8 and unpaired surrogate escapes decode to it)", "name"},
			{"SurrogateInHash", `{"name":"n","source_queue":"s","config_hash":"h\udbff"}`,
				"config_hash must not hold U+FFFD (bytes that are not UTF-8 and unpaired surrogate escapes decode to it)", "config_hash"},
			{"SourceTooLong", `{"name":"n","source_queue":"` + strings.Repeat("s", 256) + `","config_hash":"h"}`,
				"source_queue must be at most 255 characters", "source_queue"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				r := b.post(t, "/streams/v1/queries", tc.body)
				requireError(t, r, http.StatusBadRequest, "invalid_argument", tc.msg, tc.field)
				require.Equal(t, false, r.object(t)["success"])
			})
		}
	})
}

// seedState writes one state row per key for id on a random partition through a
// cycle without an ack, and returns the partition id.
func seedState(t *testing.T, b *streamBundle, id string, stateKeys ...string) string {
	t.Helper()
	pid := queue.NewIDGenerator().New()
	ops := make([]map[string]any, len(stateKeys))
	for i, k := range stateKeys {
		ops[i] = map[string]any{"type": "upsert", "key": k, "value": map[string]any{"n": i}}
	}
	m := b.cycle(t, map[string]any{"query_id": id, "partition_id": pid, "state_ops": ops, "push_items": []any{}})
	require.Equal(t, true, m["success"], "%v", m)
	return pid
}

func stateRows(t *testing.T, b *streamBundle, id string) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.QueryRow(t.Context(), `SELECT count(*) FROM queen_streams.state WHERE query_id = $1`, id).Scan(&n))
	return n
}

func TestStreamStateGet(t *testing.T) {
	t.Parallel()
	b := setupStreams(t, Options{})
	id := b.register(t, "q.state", "src", "", "h")
	pid := queue.NewIDGenerator().New()
	ops := []map[string]any{
		{"type": "upsert", "key": "win\u001fa", "value": map[string]any{"windowEnd": 1000, "sum": 1}},
		{"type": "upsert", "key": "win\u001fb", "value": map[string]any{"windowEnd": 2000.5, "sum": 2}},
		{"type": "upsert", "key": "win\u001fc", "value": map[string]any{"windowEnd": "1500"}}, // not a number
		{"type": "upsert", "key": "win%x", "value": map[string]any{"windowEnd": 10}},
		{"type": "upsert", "key": "winAx", "value": map[string]any{"windowEnd": 10}},
		{"type": "upsert", "key": "w_n", "value": 1},
		{"type": "upsert", "key": "wXn", "value": 2},
		{"type": "upsert", "key": "Zed", "value": map[string]any{"sum": 9}},
		{"type": "upsert", "key": "", "value": 0}, // "" is a key (a non-keyed aggregate)
	}
	m := b.cycle(t, map[string]any{"query_id": id, "partition_id": pid, "state_ops": ops})
	require.Equal(t, true, m["success"], "%v", m)
	// Another shard's rows never show.
	seedState(t, b, id, "win\u001fa")

	get := func(t *testing.T, extra map[string]any) []string {
		t.Helper()
		body := map[string]any{"query_id": id, "partition_id": pid}
		for k, v := range extra {
			body[k] = v
		}
		r := b.postJSON(t, "/streams/v1/state/get", body)
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, true, m["success"])
		var out []string
		for _, row := range m["rows"].([]any) {
			row := row.(map[string]any)
			require.Equal(t, sortedKeys("key", "value", "updated_at"), keys(row))
			require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?\+00:00$`, row["updated_at"])
			out = append(out, row["key"].(string))
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		extra map[string]any
		want  []string
	}{
		{"AllSortedByBytes", nil, []string{"", "Zed", "wXn", "w_n", "win\u001fa", "win\u001fb", "win\u001fc", "win%x", "winAx"}},
		{"KeysNotAnArrayMeansAll", map[string]any{"keys": "Zed"}, []string{"", "Zed", "wXn", "w_n", "win\u001fa", "win\u001fb", "win\u001fc", "win%x", "winAx"}},
		{"Keys", map[string]any{"keys": []string{"wXn", "Zed", "unknown", "Zed"}}, []string{"Zed", "wXn"}},
		{"UnknownKeysAbsent", map[string]any{"keys": []string{"nope"}}, nil},
		{"EmptyKey", map[string]any{"keys": []string{""}}, []string{""}},
		{"Prefix", map[string]any{"key_prefix": "win\u001f"}, []string{"win\u001fa", "win\u001fb", "win\u001fc"}},
		{"PercentIsLiteral", map[string]any{"key_prefix": "win%"}, []string{"win%x"}},
		{"UnderscoreIsLiteral", map[string]any{"key_prefix": "w_"}, []string{"w_n"}},
		{"Ripe", map[string]any{"ripe_at_or_before": 1999}, []string{"win\u001fa", "win%x", "winAx"}},
		{"RipeInclusive", map[string]any{"ripe_at_or_before": 2000.5}, []string{"win\u001fa", "win\u001fb", "win%x", "winAx"}},
		{"PrefixAndRipe", map[string]any{"key_prefix": "win\u001f", "ripe_at_or_before": 5000}, []string{"win\u001fa", "win\u001fb"}},
		{"KeysPrefixAndRipe", map[string]any{"keys": []string{"win\u001fa", "win%x", "Zed"}, "key_prefix": "win", "ripe_at_or_before": 1000},
			[]string{"win\u001fa", "win%x"}},
		{"NullFiltersAreAbsent", map[string]any{"keys": nil, "key_prefix": nil, "ripe_at_or_before": nil},
			[]string{"", "Zed", "wXn", "w_n", "win\u001fa", "win\u001fb", "win\u001fc", "win%x", "winAx"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, get(t, tc.extra))
		})
	}

	t.Run("Values", func(t *testing.T) {
		t.Parallel()
		r := b.postJSON(t, "/streams/v1/state/get", map[string]any{"query_id": id, "partition_id": pid, "keys": []string{"win\u001fb"}})
		require.Contains(t, string(r.body), `"value":{"sum":2,"windowEnd":2000.5}`)
	})

	t.Run("Validation", func(t *testing.T) {
		t.Parallel()
		tooMany := make([]string, queue.MaxStreamStateKeys+1)
		for i := range tooMany {
			tooMany[i] = fmt.Sprint(i)
		}
		for _, tc := range []struct {
			name       string
			body       any
			msg, field string
		}{
			{"QueryIDMissing", map[string]any{"partition_id": pid}, "query_id is required", "query_id"},
			{"QueryIDNotString", map[string]any{"query_id": 5, "partition_id": pid}, "query_id must be a string", "query_id"},
			{"QueryIDNotUUID", map[string]any{"query_id": "nope", "partition_id": pid}, "query_id must be a UUID", "query_id"},
			{"PartitionIDNotUUID", map[string]any{"query_id": id, "partition_id": "x'; drop"}, "partition_id must be a UUID", "partition_id"},
			{"KeyNotString", map[string]any{"query_id": id, "partition_id": pid, "keys": []any{"a", 1}}, "keys[1] must be a string", "keys[1]"},
			{"KeyWithNUL", map[string]any{"query_id": id, "partition_id": pid, "keys": []any{"a\x00"}}, "keys[0] must be valid UTF-8 without NUL characters", "keys[0]"},
			{"PrefixNotString", map[string]any{"query_id": id, "partition_id": pid, "key_prefix": 3}, "key_prefix must be a string", "key_prefix"},
			{"RipeNotNumber", map[string]any{"query_id": id, "partition_id": pid, "ripe_at_or_before": "100"},
				"ripe_at_or_before must be a number (epoch milliseconds)", "ripe_at_or_before"},
			{"TooManyKeys", map[string]any{"query_id": id, "partition_id": pid, "keys": tooMany},
				fmt.Sprintf("keys: at most %d keys per read (got %d)", queue.MaxStreamStateKeys, len(tooMany)), "keys"},
			{"NotAnObject", []int{1}, "request body must be a JSON object", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				r := b.postJSON(t, "/streams/v1/state/get", tc.body)
				requireError(t, r, http.StatusBadRequest, "invalid_argument", tc.msg, tc.field)
				m := r.object(t)
				require.Equal(t, false, m["success"])
				require.Equal(t, []any{}, m["rows"])
			})
		}
	})
}

func TestStreamCycleCommits(t *testing.T) {
	t.Parallel()
	b := setupStreams(t, Options{})
	const group = "streams.q"

	t.Run("StatePushAndAckTogether", func(t *testing.T) {
		t.Parallel()
		id := b.register(t, "q.commit", "c-src", "c-sink", "h")
		p := b.pushAndPop(t, "c-src", "p1", group, "m", 3)
		m := b.cycle(t, map[string]any{
			"query_id": id, "partition_id": p.partitionID, "consumer_group": group,
			"state_ops": []map[string]any{
				{"type": "upsert", "key": "a", "value": map[string]any{"n": 1}},
				{"type": "upsert", "key": "b", "value": map[string]any{"n": 1}},
				{"type": "upsert", "key": "a", "value": map[string]any{"n": 2}}, // the last op of a key wins
				{"type": "delete", "key": "b"},
				{"type": "upsert", "key": "c", "value": nil}, // JSON null is a value
				{"type": "delete", "key": "never-there"},
			},
			"push_items": []map[string]any{
				{"queue": "c-sink", "partition": "k", "payload": map[string]any{"v": 1}, "transactionId": "s1"},
				{"queue": "c-sink", "partition": "k", "payload": map[string]any{"v": 2}},
				{"queue": "c-sink", "partition": "k", "payload": map[string]any{"v": 3}, "transactionId": "s1"},
			},
			"ack": map[string]any{"transactionId": p.txids[2], "leaseId": p.leaseID, "status": "completed", "count": 3},
		})
		require.Equal(t, sortedKeys("success", "query_id", "partition_id", "queueName", "state_ops_applied", "push_results", "ack_result"), keys(m))
		require.Equal(t, true, m["success"], "%v", m)
		require.Equal(t, id, m["query_id"])
		require.Equal(t, p.partitionID, m["partition_id"])
		require.Equal(t, "c-src", m["queueName"])
		require.Equal(t, 6.0, m["state_ops_applied"])
		require.Equal(t, map[string]any{"success": true, "count": 3.0, "lease_released": true, "dlq": false}, m["ack_result"])
		push := m["push_results"].([]any)
		require.Len(t, push, 3)
		statuses := []string{}
		for i, r := range push {
			r := r.(map[string]any)
			require.Equal(t, float64(i), r["index"])
			statuses = append(statuses, r["status"].(string))
		}
		require.Equal(t, []string{"queued", "queued", "duplicate"}, statuses)
		first, second := push[0].(map[string]any), push[1].(map[string]any)
		require.Equal(t, first["message_id"], push[2].(map[string]any)["message_id"], "a duplicate carries the stored id")
		require.Less(t, first["message_id"], second["message_id"], "ids follow item order")

		s := b.snapshot(t, id, p.partitionID, group, "c-sink")
		require.Equal(t, map[string]string{"a": `{"n": 2}`, "c": "null"}, s.State)
		require.Len(t, s.Sink, 2)
		require.Equal(t, 1, int(s.Shards))
		var consumed int64
		var worker *string
		require.NoError(t, b.db.QueryRow(t.Context(), `SELECT pc.total_messages_consumed, pc.worker_id FROM queen.partition_consumers pc
			JOIN queen.messages m ON m.id = pc.last_consumed_id WHERE pc.partition_id = $1 AND pc.consumer_group = $2 AND m.transaction_id = $3`,
			p.partitionID, group, p.txids[2]).Scan(&consumed, &worker))
		require.Equal(t, int64(3), consumed)
		require.Nil(t, worker, "lease released")
		// The partition is free again: nothing left to deliver.
		requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop/queue/c-src/partition/p1?consumerGroup="+group+"&wait=false"))
	})

	t.Run("KeepLeaseWithoutRelease", func(t *testing.T) {
		t.Parallel()
		id := b.register(t, "q.gate", "g-src", "", "h")
		p := b.pushAndPop(t, "g-src", "p1", group, "m", 4)
		m := b.cycle(t, map[string]any{"query_id": id, "partition_id": p.partitionID, "consumer_group": group,
			"ack": map[string]any{"transactionId": p.txids[1], "leaseId": p.leaseID, "count": 2}, "release_lease": false})
		require.Equal(t, true, m["success"], "%v", m)
		require.Equal(t, false, m["ack_result"].(map[string]any)["lease_released"])
		var worker string
		require.NoError(t, b.db.QueryRow(t.Context(), `SELECT worker_id FROM queen.partition_consumers WHERE partition_id = $1 AND consumer_group = $2`,
			p.partitionID, group).Scan(&worker))
		require.Equal(t, p.leaseID, worker, "the lease is kept")
		// The next cycle of the same lease acks further.
		m = b.cycle(t, map[string]any{"query_id": id, "partition_id": p.partitionID, "consumer_group": group,
			"ack": map[string]any{"transactionId": p.txids[3], "leaseId": p.leaseID, "count": 2}})
		require.Equal(t, true, m["success"], "%v", m)
		require.Equal(t, true, m["ack_result"].(map[string]any)["lease_released"])
	})

	t.Run("FailedDeadLettersTheBatch", func(t *testing.T) {
		t.Parallel()
		id := b.register(t, "q.dlq", "d-src", "", "h")
		p := b.pushAndPop(t, "d-src", "p1", group, "m", 3)
		m := b.cycle(t, map[string]any{"query_id": id, "partition_id": p.partitionID, "consumer_group": group,
			"ack": map[string]any{"transactionId": p.txids[2], "leaseId": p.leaseID, "status": "failed", "count": 3, "error": "boom"}})
		require.Equal(t, true, m["success"], "%v", m)
		require.Equal(t, map[string]any{"success": true, "count": 3.0, "lease_released": true, "dlq": true, "dead_lettered": 3.0}, m["ack_result"])
		var txids []string
		require.NoError(t, b.db.QueryRow(t.Context(), `SELECT array_agg(m.transaction_id::text ORDER BY m.created_at)
			FROM queen.dead_letter_queue d JOIN queen.messages m ON m.id = d.message_id
			WHERE d.partition_id = $1 AND d.consumer_group = $2 AND d.error_message = 'boom'`, p.partitionID, group).Scan(&txids))
		require.Equal(t, p.txids, txids)
	})

	t.Run("FailedOnAQueueWithoutDeadLetterQueueDropsTheBatch", func(t *testing.T) {
		t.Parallel()
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure",
			`{"queue":"d0-src","options":{"deadLetterQueue":false,"dlqAfterMaxRetries":false}}`))
		id := b.register(t, "q.dlq-off", "d0-src", "", "h")
		p := b.pushAndPop(t, "d0-src", "p1", group, "m", 3)
		m := b.cycle(t, map[string]any{"query_id": id, "partition_id": p.partitionID, "consumer_group": group,
			"ack": map[string]any{"transactionId": p.txids[2], "leaseId": p.leaseID, "status": "failed", "count": 3, "error": "boom"}})
		require.Equal(t, true, m["success"], "%v", m)
		require.Equal(t, map[string]any{"success": true, "count": 3.0, "lease_released": true, "dlq": false}, m["ack_result"])
		var dead int
		require.NoError(t, b.db.QueryRow(t.Context(), `SELECT count(*) FROM queen.dead_letter_queue WHERE partition_id = $1`,
			p.partitionID).Scan(&dead))
		require.Zero(t, dead)
		requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop/queue/d0-src/partition/p1?consumerGroup="+group+"&wait=false"))
	})

	t.Run("NoAckAndDefaultGroup", func(t *testing.T) {
		t.Parallel()
		id := b.register(t, "q.noack", "n-src", "", "h")
		p := b.pushAndPop(t, "n-src", "p1", "", "m", 1)
		m := b.cycle(t, map[string]any{"query_id": id, "partition_id": p.partitionID, "ack": nil})
		require.Equal(t, true, m["success"], "%v", m)
		require.Nil(t, m["ack_result"])
		require.Equal(t, []any{}, m["push_results"])
		// Queue mode is the default group: an ack without consumer_group acks it.
		m = b.cycle(t, map[string]any{"query_id": id, "partition_id": p.partitionID, "consumer_group": "",
			"ack": map[string]any{"transactionId": p.txids[0], "leaseId": p.leaseID}})
		require.Equal(t, true, m["success"], "%v", m)
	})
}
