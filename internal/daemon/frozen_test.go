package daemon_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
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
