package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/encryption"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/store"
)

// txTimerOp is a timers rider op (the POST /api/v1/timers op) as JSON.
func txTimerOp(t *testing.T, queueName, key string, delayMs int64, txn, payload string) string {
	t.Helper()
	return mustJSON(t, scheduleOp(queueName, key, delayMs, txn, payload))
}

// requireNoTimer asserts that (queue, key) has no pending timer.
func requireNoTimer(t *testing.T, b *timerBundle, queueName, key string) {
	t.Helper()
	peek := b.get(t, "/api/v1/timers/"+queueName+"/"+key).object(t)
	require.Equal(t, false, peek["found"], "the timer was written: %v", peek)
}

func TestTransactionTimersRider(t *testing.T) {
	t.Parallel()
	b := setupTimers(t, true)

	t.Run("CommitsWithTheAckAndThePushThenFires", func(t *testing.T) {
		t.Parallel()
		in := b.pushOne(t, "ttx-in", "", "in-1", `{"x":1}`)
		b.popOne(t, "ttx-in", "consumerGroup=g")
		r := b.post(t, "/api/v1/transaction", fmt.Sprintf(`{"operations":[
			{"type":"ack","transactionId":"in-1","partitionId":%q,"status":"completed","consumerGroup":"g"},
			{"type":"push","items":[{"queue":"ttx-out","payload":1}]}],
			"kv":[{"op":"putIfAbsent","ns":"idem","key":"in-1","value":true,"ttlSeconds":60,"required":true}],
			"timers":[%s]}`, in["partition_id"], txTimerOp(t, "ttx-fire", "remind:in-1", 50, "fire-1", `{"remind":1}`)))
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, true, m["success"], "body: %s", r.body)
		res := m["results"].([]any)
		require.Len(t, res, 4)
		require.Equal(t, []any{float64(2), float64(0), "kv"}, []any{res[2].(map[string]any)["index"],
			res[2].(map[string]any)["opIndex"], res[2].(map[string]any)["type"]})
		timer := res[3].(map[string]any)
		require.Equal(t, sortedKeys("index", "opIndex", "type", "ok", "status", "queue", "timerKey", "txn", "messageId",
			"deliverAt"), keys(timer))
		require.Equal(t, []any{float64(3), float64(0), "timer", true, "scheduled", "ttx-fire", "remind:in-1", "fire-1"},
			[]any{timer["index"], timer["opIndex"], timer["type"], timer["ok"], timer["status"], timer["queue"],
				timer["timerKey"], timer["txn"]})
		require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`, timer["deliverAt"])

		// The timer fires as promised; the ack and the push committed with it.
		msg := b.popOne(t, "ttx-fire", "wait=true&timeout=5000")["messages"].([]any)[0].(map[string]any)
		require.Equal(t, []any{timer["messageId"], "fire-1", map[string]any{"remind": float64(1)}},
			[]any{msg["id"], msg["transactionId"], msg["data"]})
		requireStatus(t, http.StatusOK, b.get(t, "/api/v1/pop/queue/ttx-out"))
		requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop/queue/ttx-in?consumerGroup=g"))
	})

	t.Run("RidersOnly", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, "/api/v1/transaction", `{"timers":[`+txTimerOp(t, "ttx-only", "a", 3600000, "t-a", "1")+`,`+
			`{"op":"cancel","queue":"ttx-only","timerKey":"b","txn":"t-b"}]}`)
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, true, m["success"], "body: %s", r.body)
		res := m["results"].([]any)
		require.Len(t, res, 2)
		require.Equal(t, []any{float64(0), "scheduled"}, []any{res[0].(map[string]any)["index"], res[0].(map[string]any)["status"]})
		require.Equal(t, map[string]any{"index": float64(1), "opIndex": float64(1), "type": "timer", "ok": false,
			"status": "absent", "queue": "ttx-only", "timerKey": "b", "txn": "t-b"}, res[1])
		require.Equal(t, true, b.get(t, "/api/v1/timers/ttx-only/a").object(t)["found"])
	})

	t.Run("RequiredKVFailureRollsTheTimerBack", func(t *testing.T) {
		t.Parallel()
		b.kvResults(t, `[{"op":"put","ns":"idem","key":"taken","value":"winner","forever":true}]`)
		r := b.post(t, "/api/v1/transaction", `{"operations":[{"type":"push","items":[{"queue":"ttx-rb","payload":1}]}],
			"kv":[{"op":"putIfAbsent","ns":"idem","key":"taken","value":"loser","forever":true,"required":true}],
			"timers":[`+txTimerOp(t, "ttx-rb", "k", 0, "rb", "1")+`]}`)
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, []any{false, "kv_precondition", float64(1)}, []any{m["success"], m["reason"], m["failedIndex"]},
			"body: %s", r.body)
		requireNoTimer(t, b, "ttx-rb", "k")
		requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop/queue/ttx-rb"))
	})

	t.Run("DuplicatePushRollsTheTimerBack", func(t *testing.T) {
		t.Parallel()
		b.pushOne(t, "ttx-dup", "", "d-1", "1")
		r := b.post(t, "/api/v1/transaction", `{"operations":[{"type":"push","items":[{"queue":"ttx-dup","transactionId":"d-1","payload":2}]}],
			"timers":[`+txTimerOp(t, "ttx-dup-t", "k", 3600000, "d", "1")+`]}`)
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, []any{false, "duplicate"}, []any{m["success"], m["reason"]}, "body: %s", r.body)
		require.Equal(t, `QDUP duplicate messages in queue "ttx-dup" partition "Default"; transaction rolled back`, m["error"])
		requireNoTimer(t, b, "ttx-dup-t", "k")
	})

	t.Run("BeyondTheHorizonWritesNothing", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, "/api/v1/transaction", `{"operations":[{"type":"push","items":[{"queue":"ttx-hz","payload":1}]}],
			"timers":[`+txTimerOp(t, "ttx-hz", "ok", 1000, "a", "1")+`,`+
			txTimerOp(t, "ttx-hz", "far", 91*24*3600*1000, "b", "1")+`]}`)
		requireStatus(t, http.StatusForbidden, r)
		m := r.object(t)
		require.Equal(t, []any{false, "timer_horizon_exceeded", "timers_horizon", "timers[1].delayMs"},
			[]any{m["success"], m["reason"], m["code"], m["field"]}, "body: %s", r.body)
		require.Empty(t, m["results"])
		requireNoTimer(t, b, "ttx-hz", "ok")
		requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop/queue/ttx-hz"))
	})

	t.Run("Refusals", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name, body    string
			status        int
			reason, field string
		}{
			{"NotAnArray", `{"timers":{"operations":[]}}`, 400, "bad_request", "timers"},
			{"ServerOwned", `{"timers":[{"op":"schedule","queue":"q","timerKey":"k","delayMs":1,"txn":"t","payload":"MQ==","messageId":"x"}]}`,
				400, "bad_request", "timers[0].messageId"},
			{"TooLarge", `{"timers":[` + txTimerOp(t, "q", "k", 1, "t", `"`+strings.Repeat("x", 1<<20)+`"`) + `]}`,
				413, "payload_too_large", "timers[0].payload"},
			{"TooMany", `{"timers":[` + repeatJoin(`{"op":"cancel","queue":"q","timerKey":"k"}`, 257) + `]}`,
				400, "bad_request", "timers"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				r := b.post(t, "/api/v1/transaction", tc.body)
				requireStatus(t, tc.status, r)
				m := r.object(t)
				require.Equal(t, []any{false, tc.reason, tc.field}, []any{m["success"], m["reason"], m["field"]}, "body: %s", r.body)
			})
		}
		r := b.post(t, "/api/v1/transaction", `{"operations":[{"type":"timer","op":"schedule"}]}`)
		requireStatus(t, http.StatusBadRequest, r)
		require.Equal(t, "operations[0].type", r.object(t)["field"])
	})
}

// TestTransactionTimersRiderIsTenantScoped: a tenant's rider schedules under its own
// queue names and answers them unscoped.
func TestTransactionTimersRiderIsTenantScoped(t *testing.T) {
	t.Parallel()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	b := start(t, Options{TenancyHeader: "X-Tenant"}, st)
	r := b.do(t, http.MethodPost, "/api/v1/transaction", `{"timers":[`+txTimerOp(t, "orders", "k", 3600000, "t", "1")+`]}`,
		"X-Tenant", "acme")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, "orders", r.object(t)["results"].([]any)[0].(map[string]any)["queue"], "body: %s", r.body)
	require.Equal(t, true, b.get(t, "/api/v1/timers/acme:orders/k").object(t)["found"])
	require.Equal(t, false, b.get(t, "/api/v1/timers/orders/k").object(t)["found"])
}

func zstdB64(t *testing.T, plain []byte) string {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, enc.Close()) }()
	return base64.StdEncoding.EncodeToString(enc.EncodeAll(plain, nil))
}

// TestTimersZstdPayloads: a payloadZstd payload is stored as sent and fires
// decompressed; a bad frame is a 400 and an oversized one a 413 at schedule, never a
// failure at fire.
func TestTimersZstdPayloads(t *testing.T) {
	t.Parallel()
	b := setupTimers(t, true)
	op := scheduleOp("zq", "k", 0, "z-1", "")
	op["payload"], op["payloadZstd"] = zstdB64(t, []byte(`{"big":"`+strings.Repeat("ab", 1000)+`"}`)), true
	op["delayMs"] = 3600000
	res := b.timers(t, op)
	require.Equal(t, "scheduled", res[0]["status"])
	peek := b.get(t, "/api/v1/timers/zq/k").object(t)
	require.Equal(t, []any{true, op["payload"]}, []any{peek["payloadZstd"], peek["payload"]})

	op["delayMs"] = 0
	b.timers(t, op)
	msg := b.popOne(t, "zq", "wait=true&timeout=5000")["messages"].([]any)[0].(map[string]any)
	require.Equal(t, map[string]any{"big": strings.Repeat("ab", 1000)}, msg["data"])

	bad := scheduleOp("zq", "bad", 0, "z-2", `{"not":"zstd"}`)
	bad["payloadZstd"] = true
	requireTimerError(t, b.post(t, "/api/v1/timers", mustJSON(t, []any{bad})), 400, "timers_bad_request",
		"timers_bad_payload", "operations[0].payload")
	bomb := scheduleOp("zq", "bomb", 0, "z-3", "")
	bomb["payload"], bomb["payloadZstd"] = zstdB64(t, []byte(`"`+strings.Repeat("x", 1<<20)+`"`)), true
	require.Less(t, len(bomb["payload"].(string)), 1<<16, "the frame itself is small")
	requireTimerError(t, b.post(t, "/api/v1/timers", mustJSON(t, []any{bomb})), 413, "payload_too_large",
		"timers_payload_too_large", "operations[0].payload")
	notJSON := scheduleOp("zq", "nj", 0, "z-4", "")
	notJSON["payload"], notJSON["payloadZstd"] = zstdB64(t, []byte("not json")), true
	requireTimerError(t, b.post(t, "/api/v1/timers", mustJSON(t, []any{notJSON})), 400, "timers_bad_request",
		"timers_payload_not_json", "operations[0].payload")
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM queen.message_timers`).Scan(&n))
	require.Equal(t, 0, n, "the refused timers were never stored, the accepted one fired")
}

// TestTimersZstdForAnEncryptedQueue: a compressed payload bound for a queue that
// encrypts is inflated, then sealed, at schedule; it pops decrypted.
func TestTimersZstdForAnEncryptedQueue(t *testing.T) {
	t.Parallel()
	sealer, err := encryption.New(bytes.Repeat([]byte{9}, 32))
	require.NoError(t, err)
	b := setupAdmin(t, withSealer(sealer))
	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure", `{"queue":"zsecret","options":{"encryptionEnabled":true}}`))
	op := scheduleOp("zsecret", "k", 0, "tx", "")
	op["payload"], op["payloadZstd"] = zstdB64(t, []byte(`{"pin":4321}`)), true
	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/timers", mustJSON(t, []any{op})))
	var zstdFlag, enc bool
	require.NoError(t, b.db.QueryRow(t.Context(), `SELECT payload_zstd, encrypted FROM queen.message_timers`).Scan(&zstdFlag, &enc))
	require.Equal(t, []bool{false, true}, []bool{zstdFlag, enc})
	runTimers(t, b.broker)
	b.broker.TimersChanged()
	m := b.popOne(t, "zsecret", "wait=true&timeout=5000")
	require.Equal(t, map[string]any{"pin": float64(4321)}, m["messages"].([]any)[0].(map[string]any)["data"])
}
