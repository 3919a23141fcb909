package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// TestNotifyWakesParkedPops: POST /internal/api/notify wakes the pops parked on a
// queue. Here a message is stored behind the broker's back (no push, so nobody is
// woken) and the parked pop re-checks only once an hour: only the notify can deliver it.
func TestNotifyWakesParkedPops(t *testing.T) {
	t.Parallel()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	cfg := broker.DefaultConfig()
	cfg.PopWaitInitialInterval, cfg.PopWaitMaxInterval = time.Hour, time.Hour
	brk := broker.New(cfg, st, testLogger(t))
	srv := httptest.NewServer(New(Options{}, brk, testLogger(t)).Handler())
	t.Cleanup(srv.Close)
	b := &testBundle{srv: srv, broker: brk}

	b.pushOne(t, "notify-q", "", "first", `1`)
	requireStatus(t, http.StatusOK, b.get(t, "/api/v1/pop/queue/notify-q?autoAck=true"))

	type answer struct {
		status int
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := srv.Client().Get(srv.URL + "/api/v1/pop/queue/notify-q?wait=true&timeout=60000")
		if err != nil {
			done <- answer{err: err}
			return
		}
		resp.Body.Close()
		done <- answer{status: resp.StatusCode}
	}()
	require.Eventually(t, func() bool { return brk.ParkedPolls() == 1 }, 10*time.Second, 10*time.Millisecond)
	_, err = st.MessageInsertBatch(t.Context(), []queue.PushItem{{Queue: "notify-q", Partition: "Default",
		TransactionID: "second", MessageID: queue.NewIDGenerator().New(), Payload: []byte(`2`)}})
	require.NoError(t, err)

	requireError(t, b.post(t, "/internal/api/notify", `{"partition":"Default"}`), http.StatusBadRequest,
		"invalid_argument", "queue is required", "queue")
	r := b.post(t, "/internal/api/notify", `{"queue":"notify-q","partition":"Default"}`)
	requireStatus(t, http.StatusOK, r)
	require.JSONEq(t, `{"status":"ok"}`, string(r.body))
	select {
	case got := <-done:
		require.NoError(t, got.err)
		require.Equal(t, http.StatusOK, got.status, "the parked pop got the stored message")
	case <-time.After(10 * time.Second):
		t.Fatal("the parked pop was not woken by the notify")
	}
}

// TestSharedState: the upstream broker's cluster-cache diagnostics answer that queen
// has none, with the maintenance flags, on the three paths.
func TestSharedState(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	for _, path := range []string{"/api/v1/system/shared-state", "/internal/api/shared-state/stats",
		"/internal/api/inter-instance/stats"} {
		r := b.get(t, path)
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, false, m["enabled"], path)
		require.Equal(t, false, m["maintenance_mode"], path)
		require.Equal(t, false, m["pop_maintenance_mode"], path)
		require.NotEmpty(t, m["reason"], path)
	}
}
