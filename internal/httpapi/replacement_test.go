package httpapi

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIdentifiersRefuseWhatDecodesToU_FFFD: JSON decoding turns bytes that are not
// UTF-8 and unpaired surrogate escapes into U+FFFD, so "t\ud800" and "t\udbff" would
// both be stored as "t\uFFFD": the second push answered as a duplicate of the first,
// the second key overwriting the first. Identifiers holding U+FFFD are refused,
// naming the field, and nothing is stored.
func TestIdentifiersRefuseWhatDecodesToU_FFFD(t *testing.T) {
	t.Parallel()
	b := setupTimers(t, false)
	ctx := context.Background()
	count := func(t *testing.T, sql string) int {
		t.Helper()
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, sql).Scan(&n))
		return n
	}
	const why = " must not hold U+FFFD (bytes that are not UTF-8 and unpaired surrogate escapes decode to it)"

	for _, tc := range []struct{ name, body, field string }{
		{"LoneHighSurrogate", `{"items":[{"queue":"rf","transactionId":"t\ud800","payload":1}]}`, "items[0].transactionId"},
		{"LoneLowSurrogate", `{"items":[{"queue":"rf","transactionId":"t\udbff","payload":1}]}`, "items[0].transactionId"},
		{"RawInvalidByte", "{\"items\":[{\"queue\":\"rf\",\"transactionId\":\"t\xff\",\"payload\":1}]}", "items[0].transactionId"},
		{"ReplacementItself", `{"items":[{"queue":"rf","transactionId":"t\ufffd","payload":1}]}`, "items[0].transactionId"},
		{"Queue", `{"items":[{"queue":"rf\ud800","payload":1}]}`, "items[0].queue"},
		{"Partition", `{"items":[{"queue":"rf","partition":"p\udc00","payload":1}]}`, "items[0].partition"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireError(t, b.post(t, "/api/v1/push", tc.body), http.StatusBadRequest, "invalid_argument",
				tc.field+why, tc.field)
		})
	}
	require.Zero(t, count(t, `SELECT count(*) FROM queen.messages`), "a refused push stores nothing")

	for _, body := range []string{
		`[{"op":"put","ns":"rf","key":"b\ud800","value":1,"forever":true}]`,
		"[{\"op\":\"put\",\"ns\":\"rf\",\"key\":\"b\xff\",\"value\":1,\"forever\":true}]",
	} {
		requireKVError(t, b.post(t, "/api/v1/kv", body), http.StatusBadRequest, "kv_bad_request", "kv_bad_key")
	}
	require.Zero(t, count(t, `SELECT count(*) FROM queen.kv_entries`), "a refused put stores nothing")

	for _, tc := range []struct{ key, txn, reason, field string }{
		{`k\ud800`, "x", "timers_bad_key", "operations[0].timerKey"},
		{"k", `x\udfff`, "timers_bad_txn", "operations[0].txn"},
	} {
		body := `{"operations":[{"op":"schedule","queue":"rf","timerKey":"` + tc.key + `","delayMs":1000,"txn":"` +
			tc.txn + `","payload":"e30="}]}`
		requireTimerError(t, b.post(t, "/api/v1/timers", body), http.StatusBadRequest, "timers_bad_request", tc.reason, tc.field)
	}
	require.Zero(t, count(t, `SELECT count(*) FROM queen.message_timers`), "a refused schedule stores nothing")

	// A name that is valid UTF-8 all through is stored as sent.
	r := b.post(t, "/api/v1/push", `{"items":[{"queue":"rf","transactionId":"t\ud83d\ude00","payload":1}]}`)
	requireStatus(t, http.StatusCreated, r)
	require.Equal(t, "t😀", r.array(t)[0]["transactionId"])
}
