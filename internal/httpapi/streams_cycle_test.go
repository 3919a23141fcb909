package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/encryption"
	"github.com/queenmq/queen/internal/queue"
)

// TestStreamCycleRefusedChangesNothing runs cycles that each carry a valid state op,
// a sink push and an ack, plus one fault, after a first committed cycle: every one
// answers success false with its reason, and the state, the sink, the cursor and
// lease, the DLQ and the shard's cycle count are exactly as before.
func TestStreamCycleRefusedChangesNothing(t *testing.T) {
	t.Parallel()
	b := setupStreams(t, Options{})
	const group = "streams.atomic"

	type fixture struct {
		id, src, sink string
		p             popped
	}
	setupShard := func(t *testing.T, name string) fixture {
		f := fixture{src: name + "-src", sink: name + "-sink"}
		f.id = b.register(t, name, f.src, f.sink, "h")
		f.p = b.pushAndPop(t, f.src, "p1", group, "m", 3)
		m := b.cycle(t, map[string]any{"query_id": f.id, "partition_id": f.p.partitionID, "consumer_group": group,
			"state_ops":  []map[string]any{{"type": "upsert", "key": "count", "value": map[string]any{"n": 1}}},
			"push_items": []map[string]any{{"queue": f.sink, "partition": "p", "payload": 1, "transactionId": "s0"}},
			"ack":        map[string]any{"transactionId": f.p.txids[0], "leaseId": f.p.leaseID, "count": 1}, "release_lease": false})
		require.Equal(t, true, m["success"], "%v", m)
		return f
	}
	// next is a valid second cycle: count 2, one more sink message, ack of m1.
	next := func(f fixture) map[string]any {
		return map[string]any{"query_id": f.id, "partition_id": f.p.partitionID, "consumer_group": group,
			"state_ops": []map[string]any{{"type": "upsert", "key": "count", "value": map[string]any{"n": 2}},
				{"type": "upsert", "key": "other", "value": true}},
			"push_items": []map[string]any{{"queue": f.sink, "partition": "p", "payload": 2, "transactionId": "s1"}},
			"ack":        map[string]any{"transactionId": f.p.txids[1], "leaseId": f.p.leaseID, "count": 1}}
	}
	ack := func(c map[string]any) map[string]any { return c["ack"].(map[string]any) }

	for _, tc := range []struct {
		name  string
		fault func(t *testing.T, f fixture, c map[string]any)
		want  string
	}{
		{"UnknownStateOpType", func(t *testing.T, f fixture, c map[string]any) {
			c["state_ops"] = append(c["state_ops"].([]map[string]any), map[string]any{"type": "merge", "key": "x", "value": 1})
		}, `state_ops[2]: unknown state op type "merge"`},
		{"FullSinkQueue", func(t *testing.T, f fixture, c map[string]any) {
			b.configure(t, f.sink, `{"maxSize":1}`)
		}, `sink queue "atomic-full-sink" is full`},
		{"StaleLease", func(t *testing.T, f fixture, c map[string]any) {
			ack(c)["leaseId"] = queue.NewIDGenerator().New()
		}, "invalid or expired lease"},
		// The ack is checked before the state ops and sink pushes run: a refused ack is
		// the reason even when a push would have failed too.
		{"StaleLeaseAndFullSink", func(t *testing.T, f fixture, c map[string]any) {
			b.configure(t, f.sink, `{"maxSize":1}`)
			ack(c)["leaseId"] = queue.NewIDGenerator().New()
		}, "invalid or expired lease"},
		{"ExpiredLease", func(t *testing.T, f fixture, c map[string]any) {
			_, err := b.db.Exec(t.Context(), `UPDATE queen.partition_consumers SET lease_expires_at = now() - interval '1 second'
				WHERE partition_id = $1 AND consumer_group = $2`, f.p.partitionID, group)
			require.NoError(t, err)
		}, "invalid or expired lease"},
		{"RetriedCycle", func(t *testing.T, f fixture, c map[string]any) {
			ack(c)["transactionId"] = f.p.txids[0]
		}, "was already acknowledged"},
		{"MessageNotFound", func(t *testing.T, f fixture, c map[string]any) {
			ack(c)["transactionId"] = "no-such-message"
		}, `message 'no-such-message' not found`},
		{"UnknownAckStatus", func(t *testing.T, f fixture, c map[string]any) {
			ack(c)["status"] = "later"
		}, `invalid ack status "later"`},
		{"AckStatusInCapitals", func(t *testing.T, f fixture, c map[string]any) {
			ack(c)["status"] = "COMPLETED"
		}, `invalid ack status "COMPLETED"`},
		// The first cycle's gate ack consumed m-0 of the leased batch (m-0..m-2): m-3,
		// pushed after the pop, is beyond it, with the lease named or not.
		{"BeyondTheLeasedBatch", func(t *testing.T, f fixture, c map[string]any) {
			ack(c)["transactionId"] = b.pushMore(t, f.src, "p1", "late")
		}, "unresolvable: message 'late' is beyond the leased batch"},
		{"BeyondTheLeasedBatchWithoutItsLease", func(t *testing.T, f fixture, c map[string]any) {
			ack(c)["transactionId"] = b.pushMore(t, f.src, "p1", "late")
			delete(ack(c), "leaseId")
		}, "unresolvable: message 'late' is beyond the leased batch"},
		{"PartitionOfAnotherQueue", func(t *testing.T, f fixture, c map[string]any) {
			other := b.pushAndPop(t, f.src+"-other", "p1", group, "o", 1)
			c["partition_id"] = other.partitionID
			ack(c)["transactionId"], ack(c)["leaseId"] = other.txids[0], other.leaseID
		}, "not to the source queue"},
		{"UnknownQuery", func(t *testing.T, f fixture, c map[string]any) {
			c["query_id"] = queue.NewIDGenerator().New()
		}, "not found (register it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := "atomic-" + strings.ToLower(strings.TrimPrefix(tc.name, "Full"))
			if tc.name == "FullSinkQueue" {
				name = "atomic-full"
			}
			f := setupShard(t, name)
			c := next(f)
			tc.fault(t, f, c)
			before := b.snapshot(t, f.id, f.p.partitionID, group, f.sink)
			m := b.cycle(t, c)
			require.Equal(t, false, m["success"], "%v", m)
			require.Contains(t, m["error"], tc.want)
			wantQueue := f.src // every answer names the query's source queue
			if tc.name == "UnknownQuery" {
				wantQueue = ""
			}
			require.Equal(t, wantQueue, m["queueName"])
			require.Equal(t, 0.0, m["state_ops_applied"])
			require.Equal(t, []any{}, m["push_results"])
			require.Nil(t, m["ack_result"])
			require.Equal(t, before, b.snapshot(t, f.id, f.p.partitionID, group, f.sink))
			require.Equal(t, []string{f.sink + "/p/s0"}, before.Sink, "the first cycle's sink message only")
			require.Equal(t, map[string]string{"count": `{"n": 1}`}, before.State, "the first cycle's state only")
		})
	}
}

// TestStreamCycleConsumedCounterSaturates: the consumed counter a cycle's ack adds
// its count to stops at the bigint maximum instead of failing every later cycle.
func TestStreamCycleConsumedCounterSaturates(t *testing.T) {
	t.Parallel()
	b := setupStreams(t, Options{})
	const group = "streams.big"
	id := b.register(t, "q.big", "big-src", "", "h")
	p := b.pushAndPop(t, "big-src", "p1", group, "m", 3)
	const maxBigint = int64(1<<63 - 1)
	_, err := b.db.Exec(t.Context(), `UPDATE queen.partition_consumers SET total_messages_consumed = $3
		WHERE partition_id = $1 AND consumer_group = $2`, p.partitionID, group, maxBigint-5)
	require.NoError(t, err)
	for i := range 2 {
		m := b.cycle(t, map[string]any{"query_id": id, "partition_id": p.partitionID, "consumer_group": group,
			"ack": map[string]any{"transactionId": p.txids[i], "leaseId": p.leaseID, "count": int64(1) << 53}, "release_lease": false})
		require.Equal(t, true, m["success"], "%v", m)
	}
	var total int64
	require.NoError(t, b.db.QueryRow(t.Context(), `SELECT total_messages_consumed FROM queen.partition_consumers
		WHERE partition_id = $1 AND consumer_group = $2`, p.partitionID, group).Scan(&total))
	require.Equal(t, maxBigint, total)
}

// TestStreamCycleRacingWorkers sends the same partition's next cycle from many
// workers at once, each with its own state value and sink message: exactly one
// commits, and only its effects are stored.
func TestStreamCycleRacingWorkers(t *testing.T) {
	t.Parallel()
	b := setupStreams(t, Options{})
	const group, workers = "streams.race", 8
	id := b.register(t, "q.race", "race-src", "race-sink", "h")
	p := b.pushAndPop(t, "race-src", "p1", group, "m", 1)

	results := make([]map[string]any, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			results[w] = b.cycle(t, map[string]any{"query_id": id, "partition_id": p.partitionID, "consumer_group": group,
				"state_ops":  []map[string]any{{"type": "upsert", "key": "winner", "value": w}},
				"push_items": []map[string]any{{"queue": "race-sink", "partition": "p", "payload": w, "transactionId": fmt.Sprint("w", w)}},
				"ack":        map[string]any{"transactionId": p.txids[0], "count": 1}})
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for w, m := range results {
		if m["success"] == true {
			require.Equal(t, -1, winner, "two cycles committed: %d and %d", winner, w)
			winner = w
			continue
		}
		require.Contains(t, m["error"], "already acknowledged")
	}
	require.NotEqual(t, -1, winner, "one cycle commits")
	s := b.snapshot(t, id, p.partitionID, group, "race-sink")
	require.Equal(t, map[string]string{"winner": fmt.Sprint(winner)}, s.State)
	require.Equal(t, []string{fmt.Sprintf("race-sink/p/w%d", winner)}, s.Sink)
	require.Equal(t, int64(1), s.Shards, "one committed cycle on the shard")
	require.Equal(t, "1", strings.Fields(s.Cursor)[1], "consumed once: %s", s.Cursor)
}

func TestStreamCycleLimits(t *testing.T) {
	t.Parallel()
	b := setupStreams(t, Options{}, func(c *broker.Config) { c.MaxPushItems = 3 })
	id := b.register(t, "q.limits", "l-src", "", "h")
	pid := queue.NewIDGenerator().New()
	base := func(extra map[string]any) map[string]any {
		c := map[string]any{"query_id": id, "partition_id": pid}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	manyOps := make([]map[string]any, queue.MaxStreamStateOps+1)
	for i := range manyOps {
		manyOps[i] = map[string]any{"type": "delete", "key": fmt.Sprint(i)}
	}
	item := map[string]any{"queue": "l-sink", "payload": 1}
	for _, tc := range []struct {
		name       string
		body       any
		msg, field string
	}{
		{"QueryIDMissing", map[string]any{"partition_id": pid}, "query_id is required", "query_id"},
		{"QueryIDNotUUID", base(map[string]any{"query_id": "1"}), "query_id must be a UUID", "query_id"},
		{"PartitionIDNotString", base(map[string]any{"partition_id": []int{1}}), "partition_id must be a string", "partition_id"},
		{"ConsumerGroupNUL", base(map[string]any{"consumer_group": "g\x00"}), "consumer_group must be valid UTF-8 without NUL characters", "consumer_group"},
		{"ReleaseLeaseNotBool", base(map[string]any{"release_lease": "true"}), "release_lease must be a boolean", "release_lease"},
		{"StateOpsNotArray", base(map[string]any{"state_ops": map[string]any{}}), "state_ops must be an array", "state_ops"},
		{"TooManyStateOps", base(map[string]any{"state_ops": manyOps}),
			fmt.Sprintf("state_ops: at most %d ops per cycle (got %d)", queue.MaxStreamStateOps, len(manyOps)), "state_ops"},
		{"StateOpNotObject", base(map[string]any{"state_ops": []any{"x"}}), "state_ops[0] must be an object", "state_ops[0]"},
		{"StateOpTypeMissing", base(map[string]any{"state_ops": []any{map[string]any{"key": "k"}}}), "state_ops[0].type is required", "state_ops[0].type"},
		{"StateOpKeyMissing", base(map[string]any{"state_ops": []any{map[string]any{"type": "delete"}}}), "state_ops[0].key is required", "state_ops[0].key"},
		{"StateOpKeyNull", base(map[string]any{"state_ops": []any{map[string]any{"type": "delete", "key": nil}}}), "state_ops[0].key is required", "state_ops[0].key"},
		{"StateOpKeyNotString", base(map[string]any{"state_ops": []any{map[string]any{"type": "delete", "key": 7}}}), "state_ops[0].key must be a string", "state_ops[0].key"},
		{"KeyTooLong", base(map[string]any{"state_ops": []any{map[string]any{"type": "delete", "key": strings.Repeat("k", queue.MaxStreamKeyBytes+1)}}}),
			fmt.Sprintf("state_ops[0].key must be at most %d bytes (got %d)", queue.MaxStreamKeyBytes, queue.MaxStreamKeyBytes+1), "state_ops[0].key"},
		{"KeyNUL", base(map[string]any{"state_ops": []any{map[string]any{"type": "delete", "key": "a\x00"}}}),
			"state_ops[0].key must be valid UTF-8 without NUL characters", "state_ops[0].key"},
		{"UpsertWithoutValue", base(map[string]any{"state_ops": []any{map[string]any{"type": "upsert", "key": "k"}}}),
			"state_ops[0].value is required for an upsert", "state_ops[0].value"},
		{"ValueTooLarge", base(map[string]any{"state_ops": []any{map[string]any{"type": "upsert", "key": "k", "value": strings.Repeat("v", queue.MaxStreamValueBytes)}}}),
			fmt.Sprintf("state_ops[0].value must be at most %d bytes of JSON (got %d)", queue.MaxStreamValueBytes, queue.MaxStreamValueBytes+2), "state_ops[0].value"},
		{"ValueNULEscape", base(map[string]any{"state_ops": []any{map[string]any{"type": "upsert", "key": "k", "value": "a\x00"}}}),
			`state_ops[0].value must not contain the escape \u0000 (PostgreSQL jsonb cannot store it)`, "state_ops[0].value"},
		{"PushItemsNotArray", base(map[string]any{"push_items": "x"}), "push_items must be an array", "push_items"},
		{"TooManyPushItems", base(map[string]any{"push_items": []any{item, item, item, item}}), "push_items: at most 3 items per request (got 4)", "push_items"},
		{"PushItemQueue", base(map[string]any{"push_items": []any{map[string]any{"payload": 1}}}), "Queue must be a string", "push_items[0].queue"},
		{"AckNotObject", base(map[string]any{"ack": "t1"}), "ack must be an object or null", "ack"},
		{"AckTransactionIDMissing", base(map[string]any{"ack": map[string]any{"status": "completed"}}), "ack.transactionId is required", "ack.transactionId"},
		{"AckCountNegative", base(map[string]any{"ack": map[string]any{"transactionId": "t", "count": -1}}), "ack.count must be a non-negative integer", "ack.count"},
		{"AckCountFraction", base(map[string]any{"ack": map[string]any{"transactionId": "t", "count": 1.5}}), "ack.count must be a non-negative integer", "ack.count"},
		{"AckLeaseNotString", base(map[string]any{"ack": map[string]any{"transactionId": "t", "leaseId": 7}}), "ack.leaseId must be a string", "ack.leaseId"},
		{"AckTransactionIDSurrogate", json.RawMessage(`{"query_id":"` + id + `","partition_id":"` + pid + `","ack":{"transactionId":"t\ud800"}}`),
			"ack.transactionId must not hold U+FFFD (bytes that are not UTF-8 and unpaired surrogate escapes decode to it)", "ack.transactionId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := b.postJSON(t, "/streams/v1/cycle", tc.body)
			requireError(t, r, http.StatusBadRequest, "invalid_argument", tc.msg, tc.field)
			require.Equal(t, false, r.object(t)["success"])
		})
	}
	require.Equal(t, 0, stateRows(t, b, id), "no refused cycle stored anything")
	require.Equal(t, int64(0), b.broker.StreamCounters().CyclesCommitted)
}

// TestStreamSinkEncryptedAndStamped: with JWT on, sink items carry the token's sub
// (never the body's producerSub) and a sink queue with encryptionEnabled stores them
// sealed; the cycle needs a read-write token, state/get a read-only one.
func TestStreamSinkEncryptedAndStamped(t *testing.T) {
	t.Parallel()
	// Long enough that no ciphertext contains it by chance.
	const secret = "plaintext-the-database-must-never-see"
	v, sg := hsMode(t)
	sealer, err := encryption.New(bytes.Repeat([]byte{9}, 32))
	require.NoError(t, err)
	b := setupStreams(t, Options{Verifier: v}, withSealer(sealer))
	admin := bearer(sg.token(t, "root", "admin"))
	writer := bearer(sg.token(t, "alice", "read-write"))
	reader := bearer(sg.token(t, "bob", "read-only"))

	requireStatus(t, http.StatusOK, b.do(t, http.MethodPost, "/api/v1/configure",
		`{"queue":"enc-sink","options":{"encryptionEnabled":true}}`, admin...))
	r := b.postJSON(t, "/streams/v1/queries", map[string]any{"name": "q.enc", "source_queue": "enc-src", "config_hash": "h"}, writer...)
	requireStatus(t, http.StatusOK, r)
	id := r.object(t)["query_id"].(string)
	cycle := map[string]any{"query_id": id, "partition_id": queue.NewIDGenerator().New(),
		"state_ops":  []map[string]any{{"type": "upsert", "key": "k", "value": 1}},
		"push_items": []map[string]any{{"queue": "enc-sink", "payload": map[string]any{"secret": secret}, "producerSub": "mallory"}}}

	requireStatus(t, http.StatusForbidden, b.postJSON(t, "/streams/v1/cycle", cycle, reader...))
	m := b.cycle(t, cycle, writer...)
	require.Equal(t, true, m["success"], "%v", m)

	var stored string
	var sealed bool
	var sub string
	require.NoError(t, b.db.QueryRow(t.Context(), `SELECT m.payload::text, m.is_encrypted, m.producer_sub FROM queen.messages m
		JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'enc-sink'`).
		Scan(&stored, &sealed, &sub))
	require.True(t, sealed)
	require.NotContains(t, stored, secret)
	require.Equal(t, "alice", sub)
	pop := b.do(t, http.MethodGet, "/api/v1/pop/queue/enc-sink?autoAck=true&wait=false", "", writer...)
	requireStatus(t, http.StatusOK, pop)
	msg := pop.object(t)["messages"].([]any)[0].(map[string]any)
	require.Equal(t, map[string]any{"secret": secret}, msg["data"])
	require.Equal(t, "alice", msg["producerSub"])

	get := b.postJSON(t, "/streams/v1/state/get", map[string]any{"query_id": id, "partition_id": cycle["partition_id"]}, reader...)
	requireStatus(t, http.StatusOK, get)
	require.Len(t, get.object(t)["rows"], 1)
	// The operator routes: listing is read-only, reset and delete are admin.
	requireStatus(t, http.StatusOK, b.do(t, http.MethodGet, "/streams/v1/queries", "", reader...))
	requireStatus(t, http.StatusForbidden, b.do(t, http.MethodPost, "/streams/v1/queries/q.enc/reset", "", writer...))
	requireStatus(t, http.StatusForbidden, b.do(t, http.MethodDelete, "/streams/v1/queries/q.enc", "", writer...))
	requireStatus(t, http.StatusOK, b.do(t, http.MethodDelete, "/streams/v1/queries/q.enc", "", admin...))
}

// TestStreamCycleWakesLongPolls parks a pop on the sink queue of a broker that never
// re-checks on its own (an hour between checks): only the cycle's wake-up after its
// commit can deliver the sink message before the pop's timeout.
func TestStreamCycleWakesLongPolls(t *testing.T) {
	t.Parallel()
	b := setupStreams(t, Options{}, func(c *broker.Config) { c.PopWaitInitialInterval, c.PopWaitMaxInterval = time.Hour, time.Hour })
	id := b.register(t, "q.wake", "w-src", "w-sink", "h")
	got := make(chan response, 1)
	go func() { got <- b.get(t, "/api/v1/pop/queue/w-sink?wait=true&timeout=60000") }()
	require.Eventually(t, func() bool { return b.broker.ParkedPolls() > 0 }, 30*time.Second, 5*time.Millisecond)
	m := b.cycle(t, map[string]any{"query_id": id, "partition_id": queue.NewIDGenerator().New(),
		"push_items": []map[string]any{{"queue": "w-sink", "payload": "woken"}}})
	require.Equal(t, true, m["success"], "%v", m)
	select {
	case r := <-got:
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, "woken", r.object(t)["messages"].([]any)[0].(map[string]any)["data"])
	case <-time.After(30 * time.Second):
		t.Fatal("the parked pop was not woken by the cycle's sink push")
	}
}

// TestStreamStateGoesWithItsQueue: deleting the source queue deletes the state of
// its partitions (a queue made again gets new partition ids), and no other state.
func TestStreamStateGoesWithItsQueue(t *testing.T) {
	t.Parallel()
	b := setupStreams(t, Options{})
	id := b.register(t, "q.drop", "drop-src", "", "h")
	p := b.pushAndPop(t, "drop-src", "p1", "streams.drop", "m", 1)
	m := b.cycle(t, map[string]any{"query_id": id, "partition_id": p.partitionID, "consumer_group": "streams.drop",
		"state_ops": []map[string]any{{"type": "upsert", "key": "k", "value": 1}},
		"ack":       map[string]any{"transactionId": p.txids[0], "leaseId": p.leaseID}})
	require.Equal(t, true, m["success"], "%v", m)
	seedState(t, b, id, "elsewhere")
	require.Equal(t, 2, stateRows(t, b, id))

	requireStatus(t, http.StatusOK, b.do(t, http.MethodDelete, "/api/v1/resources/queues/drop-src", ""))
	require.Equal(t, 1, stateRows(t, b, id), "only the deleted queue's partition lost its state")
	var n int
	require.NoError(t, b.db.QueryRow(t.Context(), `SELECT count(*) FROM queen_streams.shards WHERE partition_id = $1`, p.partitionID).Scan(&n))
	require.Zero(t, n)
	// The query itself stays registered.
	requireStatus(t, http.StatusOK, b.get(t, "/streams/v1/queries/q.drop"))
}
