package daemon_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/daemontest"
)

// timerResult is the part of a POST /api/v1/timers result the tests read.
type timerResult struct {
	Status    string `json:"status"`
	MessageID string `json:"messageId"`
}

// schedule schedules one timer through the HTTP API and returns its result.
func schedule(t *testing.T, tb *testBundle, q, key string, delayMs int64, txn, payload string) timerResult {
	t.Helper()
	body, err := json.Marshal(map[string]any{"operations": []any{map[string]any{"op": "schedule", "queue": q,
		"timerKey": key, "delayMs": delayMs, "txn": txn, "payload": base64.StdEncoding.EncodeToString([]byte(payload))}}})
	require.NoError(t, err)
	status, out := tb.raw(t, http.MethodPost, "/api/v1/timers", string(body))
	require.Equal(t, http.StatusOK, status, "%s", out)
	var res struct{ Results []timerResult }
	require.NoError(t, json.Unmarshal(out, &res), "%s", out)
	require.Len(t, res.Results, 1)
	require.Equal(t, "scheduled", res.Results[0].Status)
	return res.Results[0]
}

// messagesWithTxn counts the stored messages whose transaction id is txn, and the
// timers still pending.
func messagesWithTxn(t *testing.T, tb *testBundle, txn string) (messages, timers int) {
	t.Helper()
	conn := dbConn(t, tb)
	require.NoError(t, conn.QueryRow(ctxT(t), `SELECT (SELECT count(*) FROM queen.messages WHERE transaction_id = $1),
		(SELECT count(*) FROM queen.message_timers)`, txn).Scan(&messages, &timers))
	return messages, timers
}

// TestDaemonTimerFiresToAParkedLongPollOnce: a timer scheduled through the API
// reaches a consumer parked on the queue (only a wake-up can answer it: the re-check
// timer and the pop's timeout are 10 minutes away) as the promised message, once.
func TestDaemonTimerFiresToAParkedLongPollOnce(t *testing.T) {
	t.Parallel()

	const q = "timed"
	tb, parked := setupParked(t, q)
	res := schedule(t, tb, q, "remind:1", 200, "timer-1", `{"remind":1}`)

	a := <-parked
	require.NoError(t, a.err, "the fired timer must wake the parked pop")
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var pop api.PopResponse
	require.NoError(t, json.Unmarshal(a.body, &pop), "%s", a.body)
	require.Len(t, pop.Messages, 1)
	require.Equal(t, []string{res.MessageID, "timer-1"}, []string{pop.Messages[0].ID, pop.Messages[0].TransactionID})
	require.JSONEq(t, `{"remind":1}`, string(pop.Messages[0].Data))

	messages, timers := messagesWithTxn(t, tb, "timer-1")
	require.Equal(t, []int{1, 0}, []int{messages, timers}, "one message, and the timer is gone")
}

// TestDaemonTimerPendingAcrossARestartFiresOnce: a timer pending when its broker
// stops fires once, from the broker that serves the database next.
func TestDaemonTimerPendingAcrossARestartFiresOnce(t *testing.T) {
	t.Parallel()

	const q = "timed-restart"
	tb := startBroker(t, noTimerEnv...)
	configure(t, tb, q, api.QueueOptions{})
	res := schedule(t, tb, q, "later", 3600*1000, "timer-r", `{"after":"restart"}`)
	require.NoError(t, tb.stop(t))

	// The hour passes while no broker runs.
	conn := dbConn(t, tb)
	tag, err := conn.Exec(ctxT(t), `UPDATE queen.message_timers SET due_at = now() WHERE timer_key = 'later'
		AND claimed_until IS NULL`)
	require.NoError(t, err)
	require.Equal(t, int64(1), tag.RowsAffected(), "the timer is pending and unclaimed after the stop")
	messages, _ := messagesWithTxn(t, tb, "timer-r")
	require.Zero(t, messages, "nothing fired before the restart")

	again := serve(t, daemontest.Options{DBURL: tb.dbURL, Env: noTimerEnv})
	status, body := again.raw(t, http.MethodGet, parkedPopPath(q), "")
	require.Equal(t, http.StatusOK, status, "%s", body)
	var pop api.PopResponse
	require.NoError(t, json.Unmarshal(body, &pop), "%s", body)
	require.Len(t, pop.Messages, 1)
	require.Equal(t, []string{res.MessageID, "timer-r"}, []string{pop.Messages[0].ID, pop.Messages[0].TransactionID})

	messages, timers := messagesWithTxn(t, again, "timer-r")
	require.Equal(t, []int{1, 0}, []int{messages, timers}, "fired once after the restart")
}
