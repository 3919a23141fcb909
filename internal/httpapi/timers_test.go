package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/encryption"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
	"github.com/queenmq/queen/internal/testwait"
)

// timerBundle is a server whose broker runs its timer loop, plus a pool on the same
// database for direct checks.
type timerBundle struct {
	*testBundle
	pool *pgxpool.Pool
	url  string
}

func setupTimers(t *testing.T, fire bool) *timerBundle {
	t.Helper()
	url := pgtest.NewDBURL(t)
	st, err := store.Open(store.Options{ConnString: url, MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	b := start(t, Options{}, st)
	if fire {
		runTimers(t, b.broker)
	}
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return &timerBundle{testBundle: b, pool: pool, url: url}
}

// runTimers runs b's firing loop until the test ends.
func runTimers(t *testing.T, b *broker.Broker) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { b.RunTimers(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func scheduleOp(queueName, key string, delayMs int64, txn, payload string) map[string]any {
	return map[string]any{"op": "schedule", "queue": queueName, "timerKey": key, "delayMs": delayMs,
		"txn": txn, "payload": b64(payload)}
}

func (b *timerBundle) timers(t *testing.T, ops ...map[string]any) []map[string]any {
	t.Helper()
	r := b.post(t, "/api/v1/timers", mustJSON(t, map[string]any{"operations": ops}))
	requireStatus(t, http.StatusOK, r)
	res, ok := r.object(t)["results"].([]any)
	require.True(t, ok, "body: %s", r.body)
	out := make([]map[string]any, len(res))
	for i, x := range res {
		out[i] = x.(map[string]any)
	}
	return out
}

func requireTimerError(t *testing.T, r response, status int, code, reason, field string) {
	t.Helper()
	requireStatus(t, status, r)
	m := r.object(t)
	require.Equal(t, code, m["error"], "body: %s", r.body)
	require.Equal(t, reason, m["reason"], "body: %s", r.body)
	require.Equal(t, field, m["field"], "body: %s", r.body)
}

func TestTimersRefuseBadOperations(t *testing.T) {
	t.Parallel()
	b := setupTimers(t, false)
	ok := func(extra map[string]any) string {
		op := scheduleOp("tq", "k", 1000, "x", `{"a":1}`)
		for k, v := range extra {
			if v == nil {
				delete(op, k)
			} else {
				op[k] = v
			}
		}
		return `{"operations":[` + mustJSON(t, op) + `]}`
	}
	cases := []struct {
		name, body          string
		status              int
		code, reason, field string
	}{
		{"ProducerSub", ok(map[string]any{"producerSub": "me"}), 400, "timers_bad_request", "timers_server_owned_field", "operations[0].producerSub"},
		{"Underscore", ok(map[string]any{"_x": 1}), 400, "timers_bad_request", "timers_server_owned_field", "operations[0]._x"},
		{"Tenant", ok(map[string]any{"tenantId": "a"}), 400, "timers_bad_request", "timers_server_owned_field", "operations[0].tenantId"},
		{"DelaySeconds", ok(map[string]any{"delaySeconds": 1}), 400, "timers_bad_request", "timers_server_owned_field", "operations[0].delaySeconds"},
		{"ClaimedUntil", ok(map[string]any{"claimed_until": 1}), 400, "timers_bad_request", "timers_server_owned_field", "operations[0].claimed_until"},
		{"BadOp", ok(map[string]any{"op": "later"}), 400, "timers_bad_request", "timers_bad_op", "operations[0].op"},
		{"EmptyPartition", ok(map[string]any{"partition": ""}), 400, "timers_bad_request", "timers_bad_partition", "operations[0].partition"},
		{"NoDelay", ok(map[string]any{"delayMs": nil}), 400, "timers_bad_request", "timers_bad_delay", "operations[0].delayMs"},
		{"StringDelay", ok(map[string]any{"delayMs": "5"}), 400, "timers_bad_request", "timers_bad_delay", "operations[0].delayMs"},
		{"NoTxn", ok(map[string]any{"txn": nil}), 400, "timers_bad_request", "timers_bad_txn", "operations[0].txn"},
		{"NoKey", ok(map[string]any{"timerKey": ""}), 400, "timers_bad_request", "timers_bad_key", "operations[0].timerKey"},
		{"BadBase64", ok(map[string]any{"payload": "!!!"}), 400, "timers_bad_request", "timers_bad_payload", "operations[0].payload"},
		{"NotJSON", ok(map[string]any{"payload": b64("not json")}), 400, "timers_bad_request", "timers_payload_not_json", "operations[0].payload"},
		// Deeper than a stored document may be: base64 hides the depth from the body's
		// decoder, and the fired message could then never be read back (a 500 on pop).
		{"TooDeep", ok(map[string]any{"payload": b64(strings.Repeat("[", queue.MaxPayloadDepth+1) + strings.Repeat("]", queue.MaxPayloadDepth+1))}),
			400, "timers_bad_request", "timers_payload_not_json", "operations[0].payload"},
		{"ZstdBadFrame", ok(map[string]any{"payloadZstd": true}), 400, "timers_bad_request", "timers_bad_payload", "operations[0].payload"},
		{"Encrypted", ok(map[string]any{"encrypted": true}), 400, "timers_bad_request", "timers_encrypted_unsupported", "operations[0].encrypted"},
		{"Horizon", ok(map[string]any{"delayMs": int64(91 * 24 * 3600 * 1000)}), 403, "timer_horizon_exceeded", "timers_horizon", "operations[0].delayMs"},
		{"TooLarge", ok(map[string]any{"payload": b64(`"` + strings.Repeat("x", 1<<20) + `"`)}), 413, "payload_too_large", "timers_payload_too_large", "operations[0].payload"},
		{"NotABody", `{"ops":[]}`, 400, "timers_bad_request", "timers_bad_body", "operations"},
		{"DuplicateKey", `[` + ok(nil)[15:len(ok(nil))-2] + `,` + ok(nil)[15:len(ok(nil))-2] + `]`, 400, "timers_bad_request", "timers_duplicate_key", "operations[1].timerKey"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireTimerError(t, b.post(t, "/api/v1/timers", tc.body), tc.status, tc.code, tc.reason, tc.field)
		})
	}
	t.Run("WrappedBase64AtTheLimit", func(t *testing.T) {
		t.Parallel()
		// base64 wrapped in lines of 76 characters, as MIME encoders write it: the line
		// breaks are not payload, and a payload of exactly the limit is taken.
		enc := b64(`"` + strings.Repeat("x", broker.MaxTimerPayload-2) + `"`)
		var wrapped strings.Builder
		for len(enc) > 76 {
			wrapped.WriteString(enc[:76] + "\r\n")
			enc = enc[76:]
		}
		wrapped.WriteString(enc)
		r := b.post(t, "/api/v1/timers", mustJSON(t, []any{map[string]any{"op": "schedule", "queue": "tq-wrapped",
			"timerKey": "k", "delayMs": 60_000, "txn": "t", "payload": wrapped.String()}}))
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, "scheduled", r.object(t)["results"].([]any)[0].(map[string]any)["status"])
	})
	t.Run("TooManyOps", func(t *testing.T) {
		t.Parallel()
		ops := make([]map[string]any, broker.MaxTimerOps+1)
		for i := range ops {
			ops[i] = scheduleOp("tq", fmt.Sprint(i), 1000, "x", "1")
		}
		r := b.post(t, "/api/v1/timers", mustJSON(t, ops))
		requireTimerError(t, r, 400, "timers_bad_request", "timers_too_many_ops", "operations")
	})
	t.Run("NothingStored", func(t *testing.T) {
		t.Parallel()
		var n int
		require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM queen.message_timers`).Scan(&n))
		require.Zero(t, n)
	})
}

func TestTimersScheduleRescheduleCancelPeekList(t *testing.T) {
	t.Parallel()
	b := setupTimers(t, false)
	hour := int64(3600 * 1000)

	res := b.timers(t, scheduleOp("orders", "trial:acme:day7", hour, "tx-1", `{"kind":"day7"}`))
	require.Equal(t, "scheduled", res[0]["status"])
	require.Equal(t, true, res[0]["ok"])
	require.Equal(t, "tx-1", res[0]["txn"])
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`, res[0]["deliverAt"])
	firstID := res[0]["messageId"]
	require.NotEmpty(t, firstID)

	res = b.timers(t, scheduleOp("orders", "trial:acme:day7", hour, "tx-2", `{"kind":"again"}`))
	require.Equal(t, "rescheduled", res[0]["status"])
	require.NotEqual(t, firstID, res[0]["messageId"])

	peek := b.get(t, "/api/v1/timers/orders/trial:acme:day7").object(t)
	require.Equal(t, true, peek["found"])
	require.Equal(t, "tx-2", peek["txn"])
	require.Equal(t, "Default", peek["partition"])
	require.Equal(t, b64(`{"kind":"again"}`), peek["payload"])
	require.Equal(t, false, peek["claimed"])
	require.Equal(t, float64(0), peek["attempts"])

	miss := b.get(t, "/api/v1/timers/orders/nope").object(t)
	require.Equal(t, map[string]any{"found": false, "queue": "orders", "timerKey": "nope"}, miss)

	for _, k := range []string{"a/1", "a/2", "b/1"} {
		b.timers(t, scheduleOp("orders", k, hour, "t-"+k, "1"))
	}
	page := b.get(t, "/api/v1/timers/orders?limit=2").object(t)
	require.Len(t, page["rows"], 2)
	require.Equal(t, true, page["truncated"])
	require.Equal(t, "a/2", page["nextAfter"])
	require.NotContains(t, page["rows"].([]any)[0], "payload")
	page = b.get(t, "/api/v1/timers/orders?limit=2&after=a/2").object(t)
	require.Len(t, page["rows"], 2)
	require.Equal(t, false, page["truncated"])
	require.Nil(t, page["nextAfter"])

	require.Equal(t, float64(2), b.get(t, "/api/v1/timers/orders?mode=count&prefix=a/").object(t)["count"])
	requireTimerError(t, b.get(t, "/api/v1/timers/orders?mode=count"), 400, "timers_bad_request", "timers_count_prefix_required", "prefix")
	requireTimerError(t, b.get(t, "/api/v1/timers/orders?mode=count&prefix=a&limit=2"), 400, "timers_bad_request", "timers_count_page_parameters", "limit")
	requireTimerError(t, b.get(t, "/api/v1/timers/orders?mode=sum"), 400, "timers_bad_request", "timers_read_mode_unknown", "mode")

	r := b.do(t, http.MethodDelete, "/api/v1/timers/orders/a/1?txn=whatever", "")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, map[string]any{"ok": true, "status": "cancelled", "queue": "orders", "timerKey": "a/1", "txn": "t-a/1"}, r.object(t))
	r = b.do(t, http.MethodDelete, "/api/v1/timers/orders/a/1?txn=mine", "")
	require.Equal(t, map[string]any{"ok": false, "status": "absent", "queue": "orders", "timerKey": "a/1", "txn": "mine"}, r.object(t))
	res = b.timers(t, map[string]any{"op": "cancel", "queue": "orders", "timerKey": "a/1"})
	require.Equal(t, map[string]any{"ok": false, "status": "absent", "queue": "orders", "timerKey": "a/1", "txn": nil}, res[0])

	// A claimed timer (a broker is firing it) can be neither rescheduled nor cancelled.
	_, err := b.pool.Exec(context.Background(), `UPDATE queen.message_timers SET claimed_until = now() + interval '30 seconds',
		claimed_by = 'other' WHERE timer_key = 'b/1'`)
	require.NoError(t, err)
	require.Equal(t, true, b.get(t, "/api/v1/timers/orders/b/1").object(t)["claimed"])
	res = b.timers(t, scheduleOp("orders", "b/1", hour, "t", "1"), map[string]any{"op": "cancel", "queue": "orders", "timerKey": "a/2"})
	require.Equal(t, map[string]any{"ok": false, "status": "too_late", "queue": "orders", "timerKey": "b/1"}, res[0])
	require.Equal(t, "cancelled", res[1]["status"])
	r = b.do(t, http.MethodDelete, "/api/v1/timers/orders/b/1", "")
	require.Equal(t, "too_late", r.object(t)["status"])
}

// TestTimersFireToAParkedLongPoll: a due timer reaches a consumer already parked on
// the queue, as the promised message (id, transactionId, data), well within a second.
func TestTimersFireToAParkedLongPoll(t *testing.T) {
	t.Parallel()
	b := setupTimers(t, true)
	b.pushOne(t, "fire", "p1", "warm", "0") // the queue exists, so the pop parks
	b.popOne(t, "fire", "batch=1&autoAck=true")

	var lateness []time.Duration
	for i := range 5 {
		got := make(chan response, 1)
		go func() { got <- b.get(t, "/api/v1/pop/queue/fire?wait=true&timeout=10000&autoAck=true") }()
		testwait.For(t, 5*time.Second, 5*time.Millisecond, func() error {
			if b.broker.ParkedPolls() == 0 {
				return fmt.Errorf("not parked yet")
			}
			return nil
		})
		op := scheduleOp("fire", fmt.Sprint("k", i), 100, fmt.Sprint("tx-", i), fmt.Sprintf(`{"n":%d}`, i))
		op["partition"] = "p1"
		res := b.timers(t, op)
		due, err := time.Parse(time.RFC3339Nano, res[0]["deliverAt"].(string))
		require.NoError(t, err)
		r := <-got
		delivered := time.Now()
		requireStatus(t, http.StatusOK, r)
		msg := r.object(t)["messages"].([]any)[0].(map[string]any)
		require.Equal(t, res[0]["messageId"], msg["id"])
		require.Equal(t, fmt.Sprint("tx-", i), msg["transactionId"])
		require.Equal(t, map[string]any{"n": float64(i)}, msg["data"])
		lateness = append(lateness, delivered.Sub(due))
	}
	t.Logf("due → delivered to a parked long-poll: %v", lateness)
	for _, l := range lateness {
		require.Less(t, l, time.Second)
	}
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM queen.message_timers`).Scan(&n))
	require.Zero(t, n)
}

// TestTimersFireExactlyOnceAcrossReplicas: two brokers on one database fire many
// timers across a restart of one of them, one timer left claimed by a broker that
// died; each message exists once, in due order per partition.
func TestTimersFireExactlyOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	b := setupTimers(t, false)
	const n = 600
	due := make(map[string]string, n) // txn → deliverAt (fixed width: compares as text)
	for start := 0; start < n; start += broker.MaxTimerOps {
		var ops []map[string]any
		for i := start; i < min(start+broker.MaxTimerOps, n); i++ {
			op := scheduleOp("once", fmt.Sprint("k", i), int64(i%7)*20, fmt.Sprint("tx-", i), fmt.Sprint(i))
			op["partition"] = fmt.Sprint("p", i%3)
			ops = append(ops, op)
		}
		for _, res := range b.timers(t, ops...) {
			due[res["txn"].(string)] = res["deliverAt"].(string)
		}
	}
	// A broker that claimed one timer and died: claimable again once its lease ran out.
	_, err := b.pool.Exec(context.Background(), `UPDATE queen.message_timers SET claimed_by = 'dead',
		claimed_until = now() - interval '1 second' WHERE timer_key = 'k5'`)
	require.NoError(t, err)

	st2, err := store.Open(store.Options{ConnString: b.url, MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(st2.Close)
	second := broker.New(broker.DefaultConfig(), st2, testLogger(t))
	// The first broker fires alone for a while and stops (a restart); then it and a
	// second one fire together.
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.broker.RunTimers(ctx) }()
	testwait.For(t, 10*time.Second, 5*time.Millisecond, func() error {
		if b.broker.TimersFired() == 0 {
			return fmt.Errorf("nothing fired yet")
		}
		return nil
	})
	stop()
	<-done
	runTimers(t, b.broker)
	runTimers(t, second)

	testwait.For(t, 30*time.Second, 20*time.Millisecond, func() error {
		var left int
		if err := b.pool.QueryRow(context.Background(), `SELECT count(*) FROM queen.message_timers`).Scan(&left); err != nil {
			return err
		}
		if left > 0 {
			return fmt.Errorf("%d timers left", left)
		}
		return nil
	})
	var total, distinct int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT transaction_id)
		FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
		WHERE q.name = 'once'`).Scan(&total, &distinct))
	require.Equal(t, n, total)
	require.Equal(t, n, distinct)
	require.Equal(t, int64(n), b.broker.TimersFired()+second.TimersFired())

	// Within each partition the messages follow due order.
	rows, err := b.pool.Query(context.Background(), `SELECT p.name, m.transaction_id
		FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
		WHERE q.name = 'once' ORDER BY p.name, m.created_at, m.id`)
	require.NoError(t, err)
	last := map[string]string{}
	for rows.Next() {
		var part, txn string
		require.NoError(t, rows.Scan(&part, &txn))
		require.GreaterOrEqual(t, due[txn], last[part], "partition %s: %s out of due order", part, txn)
		last[part] = due[txn]
	}
	require.NoError(t, rows.Err())
}

// TestTimersFailuresBackOffThenDeadLetter: a timer whose message the queue refuses
// counts attempts with a lastError, then goes to the dead timers after 5.
func TestTimersFailuresBackOffThenDeadLetter(t *testing.T) {
	t.Parallel()
	b := setupTimers(t, true)
	// A full queue refuses the timer's message.
	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure", `{"queue":"fail","options":{"maxSize":1}}`))
	b.pushOne(t, "fail", "Default", "first", "1")
	res := b.timers(t, scheduleOp("fail", "k", 0, "second", "2"))
	require.Equal(t, "scheduled", res[0]["status"])
	testwait.For(t, 10*time.Second, 10*time.Millisecond, func() error {
		peek := b.get(t, "/api/v1/timers/fail/k").object(t)
		if peek["attempts"] != float64(1) {
			return fmt.Errorf("attempts %v", peek["attempts"])
		}
		require.Contains(t, peek["lastError"], "refused")
		require.Equal(t, false, peek["claimed"])
		return nil
	})
	// Skip the backoffs: make the timer due with 4 attempts counted.
	_, err := b.pool.Exec(context.Background(), `UPDATE queen.message_timers SET attempts = 4, due_at = now()`)
	require.NoError(t, err)
	b.broker.TimersChanged()
	testwait.For(t, 10*time.Second, 10*time.Millisecond, func() error {
		var dead int
		if err := b.pool.QueryRow(context.Background(), `SELECT count(*) FROM queen.message_timers_dead
			WHERE queue_name = 'fail' AND consumer_group = '__timer__' AND retry_count = 5`).Scan(&dead); err != nil {
			return err
		}
		if dead != 1 {
			return fmt.Errorf("%d dead", dead)
		}
		return nil
	})
	require.Equal(t, false, b.get(t, "/api/v1/timers/fail/k").object(t)["found"])
}

// TestTimersReusedTxnMakesAnotherMessage: a timer's message is not deduplicated. When
// its txn is already stored in the partition (a message pushed with it, or the timer's
// own earlier fire), the message is appended with its message id as transaction id.
func TestTimersReusedTxnMakesAnotherMessage(t *testing.T) {
	t.Parallel()
	b := setupTimers(t, true)
	b.pushOne(t, "reuse", "Default", "taken", `"pushed"`)
	first := b.timers(t, scheduleOp("reuse", "k", 0, "fresh", `"fired-1"`))
	again := b.timers(t, scheduleOp("reuse", "k2", 0, "taken", `"fired-2"`))
	require.Equal(t, "scheduled", first[0]["status"])
	require.Equal(t, "scheduled", again[0]["status"])
	pop := func() []map[string]any { // what is there now, acked as it is answered
		r := b.get(t, "/api/v1/pop/queue/reuse?batch=10&autoAck=true")
		if r.status == http.StatusNoContent {
			return nil
		}
		requireStatus(t, http.StatusOK, r)
		return rows(t, r.object(t), "messages")
	}
	var got []map[string]any
	testwait.For(t, 10*time.Second, 20*time.Millisecond, func() error {
		if m := pop(); m != nil {
			got = append(got, m...)
		}
		if len(got) < 3 {
			return fmt.Errorf("%d of 3 messages", len(got))
		}
		return nil
	})
	byData := map[string]map[string]any{}
	for _, m := range got {
		byData[fmt.Sprint(m["data"])] = m
	}
	require.Equal(t, "taken", byData["pushed"]["transactionId"])
	require.Equal(t, "fresh", byData["fired-1"]["transactionId"])
	require.Equal(t, first[0]["messageId"], byData["fired-1"]["id"], "the id promised at scheduling")
	require.Equal(t, again[0]["messageId"], byData["fired-2"]["id"])
	require.Equal(t, again[0]["messageId"], byData["fired-2"]["transactionId"], "the taken txn gives way to the message id")

	// Rescheduling the same txn after its fire makes another message too.
	third := b.timers(t, scheduleOp("reuse", "k", 0, "fresh", `"fired-3"`))
	testwait.For(t, 10*time.Second, 20*time.Millisecond, func() error {
		m := pop()
		if len(m) == 0 {
			return errors.New("not fired yet")
		}
		require.Equal(t, "fired-3", m[0]["data"])
		require.Equal(t, third[0]["messageId"], m[0]["transactionId"])
		return nil
	})
}

// TestTimersAreTenantScoped: a tenant's timers are keyed under its queues; another
// tenant reads them as absent and cannot cancel them.
func TestTimersAreTenantScoped(t *testing.T) {
	t.Parallel()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	b := start(t, Options{TenancyHeader: "X-Tenant"}, st)
	body := mustJSON(t, []any{scheduleOp("orders", "k1", 3600000, "tx", "1")})
	r := b.do(t, http.MethodPost, "/api/v1/timers", body, "X-Tenant", "acme")
	requireStatus(t, http.StatusOK, r)
	res := r.object(t)["results"].([]any)[0].(map[string]any)
	require.Equal(t, "scheduled", res["status"])
	require.Equal(t, "orders", res["queue"])

	r = b.do(t, http.MethodGet, "/api/v1/timers/orders/k1", "", "X-Tenant", "other")
	require.Equal(t, false, r.object(t)["found"])
	r = b.do(t, http.MethodDelete, "/api/v1/timers/orders/k1", "", "X-Tenant", "other")
	require.Equal(t, "absent", r.object(t)["status"])

	r = b.do(t, http.MethodGet, "/api/v1/timers/orders/k1", "", "X-Tenant", "acme")
	require.Equal(t, true, r.object(t)["found"])
	require.Equal(t, "orders", r.object(t)["queue"])
	require.Equal(t, true, b.get(t, "/api/v1/timers/acme:orders/k1").object(t)["found"])
	require.Equal(t, false, b.get(t, "/api/v1/timers/orders/k1").object(t)["found"])

	// A name a tenant may not use (it would reach another tenant's queue) is refused as
	// a bad queue on every timer route.
	r = b.do(t, http.MethodPost, "/api/v1/timers", mustJSON(t, []any{scheduleOp("other:orders", "k1", 3600000, "tx", "1")}),
		"X-Tenant", "acme")
	requireTimerError(t, r, http.StatusBadRequest, "timers_bad_request", "timers_bad_queue", "operations[0].queue")
	for _, path := range []string{"/api/v1/timers/other:orders/k1", "/api/v1/timers/other:orders"} {
		requireTimerError(t, b.do(t, http.MethodGet, path, "", "X-Tenant", "acme"),
			http.StatusBadRequest, "timers_bad_request", "timers_bad_queue", "queue")
	}
	requireTimerError(t, b.do(t, http.MethodDelete, "/api/v1/timers/other:orders/k1", "", "X-Tenant", "acme"),
		http.StatusBadRequest, "timers_bad_request", "timers_bad_queue", "queue")
}

// TestTimersSealForAnEncryptedQueue: the broker seals a timer bound for a queue with
// encryptionEnabled at schedule time, refuses a client's encrypted:true there, and
// the fired message pops decrypted.
func TestTimersSealForAnEncryptedQueue(t *testing.T) {
	t.Parallel()
	sealer, err := encryption.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	b := setupAdmin(t, withSealer(sealer))
	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure", `{"queue":"secret","options":{"encryptionEnabled":true}}`))

	op := scheduleOp("secret", "k", 3600000, "tx", `{"pin":1234}`)
	op["encrypted"] = true
	requireTimerError(t, b.post(t, "/api/v1/timers", mustJSON(t, []any{op})), 400, "timers_bad_request",
		"timers_encrypted_queue", "operations[0].encrypted")

	r := b.post(t, "/api/v1/timers", mustJSON(t, []any{scheduleOp("secret", "k", 0, "tx", `{"pin":1234}`)}))
	requireStatus(t, http.StatusOK, r)
	var stored []byte
	var enc bool
	require.NoError(t, b.db.QueryRow(t.Context(), `SELECT payload, encrypted FROM queen.message_timers`).Scan(&stored, &enc))
	require.True(t, enc)
	require.NotContains(t, string(stored), "1234")

	runTimers(t, b.broker)
	b.broker.TimersChanged()
	m := b.popOne(t, "secret", "wait=true&timeout=5000")
	require.Equal(t, map[string]any{"pin": float64(1234)}, m["messages"].([]any)[0].(map[string]any)["data"])
}

// TestTimersIntoAnEncryptedQueueWithoutTheKey: a queue whose stored encryptionEnabled
// this broker cannot honour (no key) refuses a timer in the timers envelope, and a
// transaction's push in the transaction's, so a 1.x client reads a code, not a sentence.
func TestTimersIntoAnEncryptedQueueWithoutTheKey(t *testing.T) {
	t.Parallel()
	b := setupTimers(t, false)
	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure", `{"queue":"sealed"}`))
	_, err := b.pool.Exec(t.Context(), `UPDATE queen.queues SET encryption_enabled = true WHERE name = 'sealed'`)
	require.NoError(t, err)
	r := b.post(t, "/api/v1/timers", mustJSON(t, []any{scheduleOp("sealed", "k", 0, "tx", `{"a":1}`)}))
	requireStatus(t, http.StatusConflict, r)
	m := r.object(t)
	require.Equal(t, []any{"conflict", "conflict"}, []any{m["error"], m["reason"]}, "body: %s", r.body)
	require.Contains(t, m["detail"], "QUEEN_ENCRYPTION_KEY", "body: %s", r.body)

	// A transaction pushing there answers in the transaction's envelope.
	r = b.post(t, "/api/v1/transaction", `{"operations":[{"type":"push","items":[{"queue":"sealed","payload":1}]}]}`)
	requireStatus(t, http.StatusConflict, r)
	m = r.object(t)
	require.Equal(t, []any{false, "conflict", []any{}}, []any{m["success"], m["reason"], m["results"]}, "body: %s", r.body)
	require.NotEmpty(t, m["transactionId"])
}
