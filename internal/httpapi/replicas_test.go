package httpapi

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/store"
)

func TestClusterViews(t *testing.T) {
	t.Parallel()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	b := start(t, Options{}, st)

	t.Run("ReplicasListsTheHeartbeatRows", func(t *testing.T) {
		requireStatus(t, http.StatusOK, b.get(t, "/api/v1/system/replicas"))
		require.JSONEq(t, `{"replicas":[]}`, string(b.get(t, "/api/v1/system/replicas").body))

		at := time.Date(2026, 4, 26, 10, 0, 0, 0, time.UTC)
		_, err := st.ReplicaBeat(t.Context(), store.Replica{Instance: "r1", ProcessID: "p", Hostname: "h1", PID: 42,
			Version: "1.2.3", StartedAt: at, StaleAfter: 15 * time.Second, Ready: true, ParkedLongPolls: 3,
			PoolInUse: 2, PoolMax: 8, SpoolPending: 5, SpoolOldestPendingAge: 2500 * time.Millisecond, SpoolHealthy: true,
			Jobs: []store.ReplicaJob{
				{Name: "retention", LastResult: "success", LastCycle: "skipped_not_due", LastRunAt: &at, LastSuccessAt: &at},
				{Name: "eviction", LastCycle: "skipped_locked"},
			},
			SocketActivated: true, WatchdogInterval: 30 * time.Second})
		require.NoError(t, err)
		m := b.get(t, "/api/v1/system/replicas").object(t)
		reps := m["replicas"].([]any)
		require.Len(t, reps, 1)
		rep := reps[0].(map[string]any)
		seen, err := time.Parse(time.RFC3339, rep["lastSeenAt"].(string))
		require.NoError(t, err, "RFC 3339")
		require.WithinDuration(t, time.Now(), seen, time.Minute)
		delete(rep, "lastSeenAt")
		require.JSONEq(t, `{"instance":"r1","hostname":"h1","pid":42,"version":"1.2.3",
			"startedAt":"2026-04-26T10:00:00.000Z","stale":false,"ready":true,"draining":false,"parkedLongPolls":3,
			"pool":{"inUse":2,"max":8},"spool":{"pending":5,"oldestPendingAgeSeconds":2.5,"healthy":true},
			"jobs":[
			  {"name":"retention","lastSuccessAt":"2026-04-26T10:00:00.000Z","lastResult":"success",
			   "lastCycle":"skipped_not_due","lastRunAt":"2026-04-26T10:00:00.000Z"},
			  {"name":"eviction","lastSuccessAt":null,"lastResult":"","lastCycle":"skipped_locked","lastRunAt":null}],
			"systemd":{"socketActivated":true,"watchdogSec":30}}`, mustJSON(t, rep))
	})

	t.Run("LongPollsShowsAParkedPop", func(t *testing.T) {
		b.configure(t, "lp-q", `{}`)
		require.JSONEq(t, `{"instance":"`+b.broker.Config().Instance+`","total":0,"waiters":[],"truncated":false}`,
			string(b.get(t, "/api/v1/system/longpolls").body))

		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		popped := make(chan int, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet,
				b.srv.URL+"/api/v1/pop/queue/lp-q/partition/p1?wait=true&timeout=30000&consumerGroup=billing", nil)
			resp, err := b.srv.Client().Do(req)
			if err != nil {
				popped <- 0
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			popped <- resp.StatusCode
		}()
		var m map[string]any
		require.Eventually(t, func() bool {
			m = b.get(t, "/api/v1/system/longpolls?queue=lp-q").object(t)
			return len(m["waiters"].([]any)) == 1
		}, 10*time.Second, 10*time.Millisecond)
		w := m["waiters"].([]any)[0].(map[string]any)
		require.GreaterOrEqual(t, w["oldestParkedSeconds"].(float64), 0.0)
		delete(w, "oldestParkedSeconds")
		require.Equal(t, map[string]any{"queue": "lp-q", "consumerGroup": "billing", "partition": "p1", "count": 1.0}, w)
		require.Equal(t, 1.0, m["total"])
		require.Empty(t, b.get(t, "/api/v1/system/longpolls?queue=other").object(t)["waiters"])

		b.pushOne(t, "lp-q", "p1", "", `{"n":1}`)
		require.Equal(t, http.StatusOK, <-popped, "the push answers the parked pop")
		require.Eventually(t, func() bool {
			return len(b.get(t, "/api/v1/system/longpolls").object(t)["waiters"].([]any)) == 0
		}, 10*time.Second, 10*time.Millisecond)

		requireError(t, b.get(t, "/api/v1/system/longpolls?queue=bad%00name"), http.StatusBadRequest,
			"invalid_argument", "queue must be valid UTF-8 without NUL characters", "queue")
	})

	t.Run("ConsumerLagServesTheSamples", func(t *testing.T) {
		b.configure(t, "lag-q", `{}`)
		for range 4 {
			b.pushOne(t, "lag-q", "", "", `{}`)
		}
		b.popOne(t, "lag-q", "consumerGroup=reports&batch=1&autoAck=true")
		// A partition the group has no cursor on owes all of it, as the group views say.
		for range 2 {
			b.pushOne(t, "lag-q", "other", "", `{}`)
		}
		_, _, err := st.ConsumerLagSample(t.Context(), time.Now(), time.Minute, 100)
		require.NoError(t, err)

		m := b.get(t, "/api/v1/analytics/consumer-lag?group=reports").object(t)
		require.Equal(t, 1.0, m["bucketMinutes"])
		series := m["series"].([]any)
		require.Len(t, series, 1)
		p := series[0].(map[string]any)
		bucket, err := time.Parse(time.RFC3339, p["bucket"].(string))
		require.NoError(t, err)
		require.Equal(t, time.Now().UTC().Truncate(time.Minute), bucket)
		require.GreaterOrEqual(t, p["maxTimeLag"].(float64), 0.0)
		delete(p, "bucket")
		delete(p, "maxTimeLag")
		require.Equal(t, map[string]any{"group": "reports", "queue": "lag-q", "totalLag": 5.0, "partitionsWithLag": 2.0}, p)
		var views []any
		for _, g := range b.get(t, "/api/v1/consumer-groups").array(t) {
			if g["name"] == "reports" {
				views = append(views, g["totalLag"], g["partitionsWithLag"])
			}
		}
		require.Equal(t, []any{5.0, 2.0}, views, "the group view's numbers")

		require.Len(t, b.get(t, "/api/v1/analytics/consumer-lag?queue=lag-q").object(t)["series"], 1)
		require.Empty(t, b.get(t, "/api/v1/analytics/consumer-lag?group=nobody").object(t)["series"])
		from := time.Now().Add(-6 * 24 * time.Hour).UTC().Format(time.RFC3339)
		require.Equal(t, 60.0, b.get(t, "/api/v1/analytics/consumer-lag?from="+from).object(t)["bucketMinutes"])
		requireError(t, b.get(t, "/api/v1/analytics/consumer-lag?group=a%00b"), http.StatusBadRequest,
			"invalid_argument", "group must be valid UTF-8 without NUL characters", "group")
		requireError(t, b.get(t, "/api/v1/analytics/consumer-lag?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z"),
			http.StatusBadRequest, "invalid_argument", "from must be before to", "from")
		require.True(t, strings.HasPrefix(b.get(t, "/api/v1/analytics/consumer-lag").header.Get("Content-Type"),
			"application/json"))
	})
}
