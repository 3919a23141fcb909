package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
)

// noTimerEnv makes the long-poll re-check timer useless (first re-check after 10
// minutes) and allows 10-minute long-polls, so that within a test only a wake-up (a
// push, or the drain on shutdown) can answer a parked pop.
var noTimerEnv = []string{
	"POP_WAIT_INITIAL_INTERVAL_MS=600000",
	"POP_WAIT_MAX_INTERVAL_MS=600000",
	"QUEEN_MAX_POP_TIMEOUT_MS=600000",
}

// parkedPopPath long-polls the Default partition of q in queue mode for 10 minutes.
// It uses the single-partition route because that route's first attempt leaves a
// trace in the database (the group's cursor row), which tells the test the pop has
// made its first, empty, attempt and is parked (see waitFirstAttempt).
func parkedPopPath(q string) string {
	return "/api/v1/pop/queue/" + q + "/partition/" + api.DefaultPartition + "?wait=true&timeout=600000"
}

// dbConn opens a connection to the broker's database, closed when the test ends.
func dbConn(t *testing.T, tb *testBundle) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctxT(t), tb.dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.WithoutCancel(ctxT(t))) })
	return conn
}

// cursorRows counts the consumer rows of q's Default partition in queue mode.
func cursorRows(ctx context.Context, conn *pgx.Conn, q string) (int, error) {
	var n int
	err := conn.QueryRow(ctx, `
		SELECT count(*) FROM queen.partition_consumers pc
		JOIN queen.partitions p ON p.id = pc.partition_id
		JOIN queen.queues qq ON qq.id = p.queue_id
		WHERE qq.name = $1 AND p.name = $2 AND pc.consumer_group = $3`,
		q, api.DefaultPartition, api.QueueModeGroup).Scan(&n)
	return n, err
}

// waitFirstAttempt waits until a pop of parkedPopPath(q) has committed its first
// attempt: from then on it is parked, and a message pushed now can only reach it
// through a wake-up.
func waitFirstAttempt(t *testing.T, conn *pgx.Conn, q string) {
	t.Helper()
	ctx := ctxT(t)
	var (
		n   int
		err error
	)
	require.Eventually(t, func() bool {
		n, err = cursorRows(ctx, conn, q)
		return err != nil || n > 0
	}, 15*time.Second, 20*time.Millisecond, "the long-poll's first attempt")
	require.NoError(t, err)
}

// setupParked starts a broker whose long-polls only wake up on events, creates the
// empty queue q and parks a 10-minute pop on it; the returned channel delivers the
// pop's answer.
func setupParked(t *testing.T, q string) (*testBundle, <-chan answer) {
	t.Helper()
	tb := startBroker(t, noTimerEnv...)
	configure(t, tb, q, api.QueueOptions{})
	conn := dbConn(t, tb)
	n, err := cursorRows(ctxT(t), conn, q)
	require.NoError(t, err)
	require.Zero(t, n, "nothing has popped yet")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	parked := tb.rawAsync(ctx, http.MethodGet, parkedPopPath(q))
	waitFirstAttempt(t, conn, q)
	select {
	case a := <-parked:
		require.FailNow(t, "the long-poll answered while it had nothing to return",
			"status %d, body %s, err %v", a.status, a.body, a.err)
	default:
	}
	return tb, parked
}

func TestDaemonLongPollWakesOnPush(t *testing.T) {
	t.Parallel()

	const q = "longpoll"
	tb, parked := setupParked(t, q)

	pushed := push(t, tb, q, "", `{"wake":"up"}`)

	// The re-check timer and the pop's timeout are 10 minutes away; only the push's
	// wake-up can answer the pop before the 60 s request context gives up.
	a := <-parked
	require.NoError(t, a.err, "the parked pop must be answered by the push's wake-up")
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var resp api.PopResponse
	require.NoError(t, json.Unmarshal(a.body, &resp), "%s", a.body)
	require.Len(t, resp.Messages, 1, "the pop returns the pushed message, not an empty answer")
	require.Equal(t, pushed[0].MessageID, resp.Messages[0].ID)
	require.JSONEq(t, `{"wake":"up"}`, string(resp.Messages[0].Data))
	require.NotEmpty(t, resp.LeaseID)
}

func TestDaemonLongPollTimesOutEmpty(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)
	const q = "idle"
	configure(t, tb, q, api.QueueOptions{})

	const timeout = 300 * time.Millisecond
	start := time.Now()
	status, body := tb.raw(t, http.MethodGet, "/api/v1/pop/queue/"+q+"?wait=true&timeout=300", "")
	elapsed := time.Since(start)
	require.Equal(t, http.StatusNoContent, status, "%s", body)
	require.Empty(t, body)
	require.GreaterOrEqual(t, elapsed, timeout, "an empty long-poll answers no earlier than its timeout")
}

// TestDaemonShutdownAnswersParkedLongPoll: cancelling the daemon answers a parked
// long-poll with an empty 204 (only the drain can: its timer and timeout are 10
// minutes away) and Run returns nil.
func TestDaemonShutdownAnswersParkedLongPoll(t *testing.T) {
	t.Parallel()

	tb, parked := setupParked(t, "draining")

	tb.cancel()
	select {
	case a := <-parked:
		require.NoError(t, a.err, "the drain answers the parked pop before closing its connection")
		require.Equal(t, http.StatusNoContent, a.status, "%s", a.body)
		require.Empty(t, a.body)
	case <-time.After(stopTimeout):
		require.FailNow(t, "the parked long-poll was not answered after cancel", "within %s", stopTimeout)
	}
	require.NoError(t, tb.stop(t), "Run returns nil after draining")
}
