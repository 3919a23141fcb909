package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/testwait"
)

// TestOutagePostgreSQLFrozen: PostgreSQL stopped with SIGSTOP under load, alive to the
// kernel but answering nothing. The pushes in flight on its connections are answered
// (buffered) once LIBQUEEN_INFLIGHT_DEADLINE_MS has passed without an answer, as is a
// long-poll parked on it; once PostgreSQL resumes, the statements it then runs and the
// spool's replay of the same pushes store each message once, in each producer's order.
func TestOutagePostgreSQLFrozen(t *testing.T) {
	t.Parallel()
	cluster := pgtest.StartCluster(t)
	n := startNode(t, daemontest.Options{DBURL: cluster.URL(), Env: []string{"LOG_LEVEL=error",
		"DB_CONNECTION_TIMEOUT=1000", "DB_STATEMENT_TIMEOUT=1000", "LIBQUEEN_INFLIGHT_DEADLINE_MS=3000",
		"FILE_BUFFER_FLUSH_MS=20"}})
	o := startOutage(t, n, "frozen")
	o.grow("queued", 100, "pushes never got through before the outage")
	unanswered := n.scrape(t)["queen_db_unanswered_statements_total"][""]

	cluster.Freeze()
	popped := make(chan int, 1)
	go func() {
		code, _, err := n.do(context.Background(), http.MethodGet,
			"/api/v1/pop/queue/frozen?consumerGroup=parked&wait=true&timeout=3000", nil)
		if err != nil {
			code = 0
		}
		popped <- code
	}()
	o.grow("buffered", 50, "pushes in flight on a silent PostgreSQL were never answered")
	select {
	case code := <-popped:
		require.Contains(t, []int{http.StatusNoContent, http.StatusServiceUnavailable}, code,
			"the long-poll parked while PostgreSQL was silent")
	case <-time.After(60 * time.Second):
		t.Fatal("a long-poll parked while PostgreSQL was silent was never answered")
	}
	require.Greater(t, n.scrape(t)["queen_db_unanswered_statements_total"][""], unanswered,
		"no connection was closed for want of an answer")

	cluster.Thaw()
	o.grow("queued", 100, "pushes never reached the database again")
	summary, delivered, st := o.finish()
	t.Logf("frozen PostgreSQL (SIGSTOP): %s; %d delivered; spool replayed %d", summary, delivered, st.Replayed)
}

// TestAPopAnswersAtItsOwnDeadlineOnASilentPostgreSQL: a long-poll whose claim gets no
// answer (PostgreSQL stopped with SIGSTOP) is answered empty at its own timeout, not
// after LIBQUEEN_INFLIGHT_DEADLINE_MS; once PostgreSQL resumes, the claim that ran on
// gives its lease back, so the message is at once another pop's.
func TestAPopAnswersAtItsOwnDeadlineOnASilentPostgreSQL(t *testing.T) {
	t.Parallel()
	cluster := pgtest.StartCluster(t)
	n := startNode(t, daemontest.Options{DBURL: cluster.URL(), Env: []string{"LOG_LEVEL=error",
		"DB_STATEMENT_TIMEOUT=20000", "QUEEN_DB_COMMIT_STALL_MS=0"}})
	n.must(t, http.MethodPost, "/api/v1/push", api.PushRequest{Items: []api.PushItem{
		{Queue: "own-deadline", TransactionID: "m1", Payload: json.RawMessage(`1`)}}}, http.StatusCreated, nil)
	// Warm a connection, so that the pop's claim is sent to the silent server rather
	// than waiting for a ping or a new connection.
	n.must(t, http.MethodGet, "/api/v1/resources/queues/own-deadline", nil, http.StatusOK, nil)

	cluster.Freeze()
	thawed := false
	defer func() {
		if !thawed {
			cluster.Thaw()
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	began := time.Now()
	code, body, err := n.do(ctx, http.MethodGet, "/api/v1/pop/queue/own-deadline?consumerGroup=g&wait=true&timeout=1500", nil)
	waited := time.Since(began)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, code, "%s", body)
	// Its own 1.5 s and the scheduling around it; the deadline of an unanswered
	// statement is 25 s here.
	require.Less(t, waited, 10*time.Second)

	cluster.Thaw()
	thawed = true
	testwait.For(t, 30*time.Second, 50*time.Millisecond, func() error {
		code, body, err := n.do(ctx, http.MethodGet, "/api/v1/pop/queue/own-deadline?consumerGroup=g&wait=false", nil)
		if err != nil {
			return err
		}
		if code != http.StatusOK || !strings.Contains(string(body), `"m1"`) {
			return fmt.Errorf("pop answered %d %s: the lease the cut claim took is not given back", code, body)
		}
		return nil
	})
}
