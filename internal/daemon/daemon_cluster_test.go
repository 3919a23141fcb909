package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/buildinfo"
	"github.com/queenmq/queen/internal/daemontest"
)

// getJSON GETs path and decodes the 200 answer into v.
func getJSON(t *testing.T, tb *testBundle, path string, v any) {
	t.Helper()
	status, body := tb.raw(t, http.MethodGet, path, "")
	require.Equal(t, http.StatusOK, status, "GET %s: %s", path, body)
	require.NoError(t, json.Unmarshal(body, v), "GET %s: %s", path, body)
}

// replicasOf returns the replica list served by tb, by instance name.
func replicasOf(t *testing.T, tb *testBundle) map[string]api.Replica {
	t.Helper()
	var list api.ReplicaList
	getJSON(t, tb, "/api/v1/system/replicas", &list)
	out := make(map[string]api.Replica, len(list.Replicas))
	for _, r := range list.Replicas {
		out[r.Instance] = r
	}
	return out
}

// TestClusterViewsOfTwoBrokers runs two brokers on one database: both list each other
// from their heartbeats; a stopped one is listed draining, then stale once its row is
// old; a parked pop shows in the long-poll view of the broker holding it; and with
// QUEEN_ANALYTICS_FLUSH_INTERVAL=1s pushes reach the analytics within seconds.
func TestClusterViewsOfTwoBrokers(t *testing.T) {
	t.Parallel()
	alpha := serve(t, daemontest.Options{Env: append([]string{"QUEEN_INSTANCE=alpha",
		"QUEEN_ANALYTICS_FLUSH_INTERVAL=1s"}, noTimerEnv...)})
	beta := serve(t, daemontest.Options{DBURL: alpha.dbURL, Env: []string{"QUEEN_INSTANCE=beta"}})

	var reps map[string]api.Replica
	require.Eventually(t, func() bool {
		reps = replicasOf(t, alpha)
		return reps["alpha"].Ready && reps["beta"].Ready
	}, 30*time.Second, 50*time.Millisecond, "both heartbeats")
	require.Len(t, replicasOf(t, beta), 2, "every replica serves the whole list")
	for _, name := range []string{"alpha", "beta"} {
		r := reps[name]
		require.False(t, r.Draining, name)
		require.False(t, r.Stale, name)
		require.Equal(t, buildinfo.Version, r.Version)
		require.Equal(t, 8, r.Pool.Max, "DB_POOL_SIZE")
		require.True(t, r.Spool.Healthy, "FILE_BUFFER_DIR is set")
		require.False(t, r.Systemd.SocketActivated)
		require.NotEmpty(t, r.Jobs)
		started, err := time.Parse(time.RFC3339, r.StartedAt)
		require.NoError(t, err)
		seen, err := time.Parse(time.RFC3339, r.LastSeenAt)
		require.NoError(t, err)
		require.False(t, seen.Before(started), name)
	}

	t.Run("LongPollsShowAParkedPop", func(t *testing.T) {
		configure(t, alpha, "views-lp", api.QueueOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		popped := alpha.rawAsync(ctx, http.MethodGet,
			"/api/v1/pop/queue/views-lp?wait=true&timeout=600000&consumerGroup=watchers")
		var list api.LongPollList
		require.Eventually(t, func() bool {
			getJSON(t, alpha, "/api/v1/system/longpolls?queue=views-lp", &list)
			return len(list.Waiters) == 1
		}, 15*time.Second, 20*time.Millisecond, "the parked pop")
		require.Equal(t, "alpha", list.Instance)
		w := list.Waiters[0]
		require.Equal(t, api.LongPollWaiter{Queue: "views-lp", ConsumerGroup: "watchers", Partition: "*", Count: 1,
			OldestParkedSeconds: w.OldestParkedSeconds}, w)
		var other api.LongPollList
		getJSON(t, beta, "/api/v1/system/longpolls", &other)
		require.Empty(t, other.Waiters, "each broker lists its own waiters")
		require.Eventually(t, func() bool { return replicasOf(t, alpha)["alpha"].ParkedLongPolls == 1 },
			30*time.Second, 50*time.Millisecond, "the heartbeat carries the count")

		push(t, alpha, "views-lp", "", `{"n":1}`)
		a := <-popped
		require.NoError(t, a.err)
		require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	})

	t.Run("FlushIntervalShowsActivityWithinSeconds", func(t *testing.T) {
		push(t, alpha, "views-flush", "", `{"n":1}`, `{"n":2}`, `{"n":3}`)
		require.Eventually(t, func() bool {
			var ops api.QueueOps
			getJSON(t, alpha, "/api/v1/analytics/queue-ops?queue=views-flush", &ops)
			var n int64
			for _, p := range ops.Series {
				n += p.PushMessages
			}
			return n == 3
		}, 30*time.Second, 100*time.Millisecond, "the open minute, written without /stats/refresh")
	})

	t.Run("AStoppedBrokerDrainsThenGoesStale", func(t *testing.T) {
		require.NoError(t, beta.stop(t))
		r := replicasOf(t, alpha)["beta"]
		require.True(t, r.Draining, "its last row")
		require.False(t, r.Ready)
		require.False(t, r.Stale, "just written")

		conn := dbConn(t, alpha)
		_, err := conn.Exec(ctxT(t), `UPDATE queen.replicas SET last_seen_at = now() - interval '1 minute'
			WHERE instance = 'beta'`)
		require.NoError(t, err)
		reps := replicasOf(t, alpha)
		require.True(t, reps["beta"].Stale)
		require.False(t, reps["alpha"].Stale)
	})
}
