package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTimersParameterErrorsUseTheTimersEnvelope: a bad path or query parameter on a
// timer route is answered in the timers envelope with the timers reason, never the
// generic error body nor the field "*"; the count prefix's own rules come before the
// generic 255-character rule.
func TestTimersParameterErrorsUseTheTimersEnvelope(t *testing.T) {
	t.Parallel()
	b := setupTimers(t, false)
	long := strings.Repeat("k", 300)
	for _, tc := range []struct {
		name, method, path, reason, field string
	}{
		{"CountPrefixNUL", http.MethodGet, "/api/v1/timers/tq4?mode=count&prefix=%00", "timers_count_prefix_invalid", "prefix"},
		{"CountPrefixNotUTF8", http.MethodGet, "/api/v1/timers/tq4?mode=count&prefix=%ff", "timers_count_prefix_invalid", "prefix"},
		{"CountPrefix129Bytes", http.MethodGet, "/api/v1/timers/tq4?mode=count&prefix=" + strings.Repeat("p", 129), "timers_count_prefix_too_long", "prefix"},
		{"CountPrefix256Chars", http.MethodGet, "/api/v1/timers/tq4?mode=count&prefix=" + strings.Repeat("p", 256), "timers_count_prefix_too_long", "prefix"},
		{"CountPrefixEmpty", http.MethodGet, "/api/v1/timers/tq4?mode=count&prefix=", "timers_count_prefix_required", "prefix"},
		{"PeekKeyTooLong", http.MethodGet, "/api/v1/timers/tq4/" + long, "timers_bad_key", "timerKey"},
		{"CancelKeyTooLong", http.MethodDelete, "/api/v1/timers/tq4/" + long, "timers_bad_key", "timerKey"},
		{"PeekKeyNUL", http.MethodGet, "/api/v1/timers/tq4/a%00b", "timers_bad_key", "timerKey"},
		{"CancelKeyEmpty", http.MethodDelete, "/api/v1/timers/tq4/", "timers_bad_key", "timerKey"},
		{"ListQueueTooLong", http.MethodGet, "/api/v1/timers/" + long, "timers_bad_queue", "queue"},
		{"CancelQueueNUL", http.MethodDelete, "/api/v1/timers/a%00b/k", "timers_bad_queue", "queue"},
		{"ListAfterNUL", http.MethodGet, "/api/v1/timers/tq4?after=%00", "timers_bad_request", "after"},
		{"CancelTxnTooLong", http.MethodDelete, "/api/v1/timers/tq4/k?txn=" + long, "timers_bad_request", "txn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := b.do(t, tc.method, tc.path, "")
			requireTimerError(t, r, http.StatusBadRequest, "timers_bad_request", tc.reason, tc.field)
			require.NotContains(t, r.object(t), "code", "not the generic error body: %s", r.body)
		})
	}
	t.Run("PeekMissIsFoundFalse", func(t *testing.T) {
		t.Parallel()
		r := b.get(t, "/api/v1/timers/tq4/"+strings.Repeat("k", 255))
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, false, r.object(t)["found"])
	})
}

// TestTimersRefuseNullBody: a body of null is no operations array (400
// timers_bad_body), as {"operations":null} is.
func TestTimersRefuseNullBody(t *testing.T) {
	t.Parallel()
	b := setupTimers(t, false)
	for _, body := range []string{`null`, `{"operations":null}`, ` null `} {
		requireTimerError(t, b.post(t, "/api/v1/timers", body), http.StatusBadRequest, "timers_bad_request", "timers_bad_body", "operations")
	}
	r := b.post(t, "/api/v1/timers", `[]`)
	requireStatus(t, http.StatusOK, r)
	require.JSONEq(t, `{"results":[]}`, string(r.body))
}

// TestTimersRefusePayloadNumbers: a payload PostgreSQL could not store as the
// delivered message, or would store far larger than sent, is refused at schedule (not
// at fire), naming the field.
func TestTimersRefusePayloadNumbers(t *testing.T) {
	t.Parallel()
	b := setupTimers(t, false)
	huge := "[" + strings.TrimSuffix(strings.Repeat("1e131000,", 50), ",") + "]"
	for _, payload := range []string{`{"n":1e200000}`, `{"n":1e-20000}`, huge, `{"n":1e1001}`} {
		r := b.post(t, "/api/v1/timers", mustJSON(t, map[string]any{"operations": []any{scheduleOp("tq", "k", 1000, "x", payload)}}))
		requireTimerError(t, r, http.StatusBadRequest, "timers_bad_request", "timers_payload_not_json", "operations[0].payload")
	}
	r := b.post(t, "/api/v1/transaction", mustJSON(t, map[string]any{"timers": []any{scheduleOp("tq", "k", 1000, "x", `{"n":1e200000}`)}}))
	requireStatus(t, http.StatusBadRequest, r)
	m := r.object(t)
	require.Equal(t, []any{"timers_payload_not_json", "timers[0].payload"}, []any{m["code"], m["field"]}, "body: %s", r.body)
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM queen.message_timers`).Scan(&n))
	require.Zero(t, n)

	res := b.timers(t, scheduleOp("tq", "ok", 1000, "x", `[1.7976931348623157e308,5e-324,1e1000]`))
	require.Equal(t, "scheduled", res[0]["status"])
}

// TestPushRefusesPayloadNumbers: a push payload with a number PostgreSQL cannot store,
// or would store far larger than sent, is the usual 400 naming the item's payload,
// and nothing is pushed.
func TestPushRefusesPayloadNumbers(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	huge := "[" + strings.TrimSuffix(strings.Repeat("1e131000,", 50), ",") + "]"
	for _, payload := range []string{`{"n":1e200000}`, `{"n":1e-20000}`, huge} {
		r := b.post(t, "/api/v1/push", `{"items":[{"queue":"num","payload":{"ok":1}},{"queue":"num","payload":`+payload+`}]}`)
		requireStatus(t, http.StatusBadRequest, r)
		m := r.object(t)
		require.Equal(t, []any{"invalid_argument", "items[1].payload"}, []any{m["code"], m["field"]}, "body: %s", r.body)
	}
	requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop/queue/num"))
	b.pushOne(t, "num", "", "f64", `[1.7976931348623157e308,5e-324]`)
	requireStatus(t, http.StatusOK, b.get(t, "/api/v1/pop/queue/num"))
}
