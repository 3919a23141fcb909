package daemon_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// propagation bounds how long a maintenance switch made through one broker may take
// to apply on another (each broker re-reads the flags from the database every 5 s at
// most), with room for a loaded test machine.
const propagation = 15 * time.Second

// setMaintenance switches a maintenance mode ("" for push, "/pop" for pop) through tb.
func setMaintenance(t *testing.T, tb *testBundle, which string, on bool) {
	t.Helper()
	status, err := tb.client.Do(ctxT(t), http.MethodPost, "/api/v1/system/maintenance"+which,
		map[string]bool{"enabled": on}, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
}

// TestHazardMaintenanceNotPropagated: upstream's brokers
// learn a maintenance switch made through another broker only through UDP sync;
// without peers they never do until restarted. A switch through broker A must take
// effect on broker B, on and off, without any peer configuration.
func TestHazardMaintenanceNotPropagated(t *testing.T) {
	t.Parallel()

	t.Run("Push", func(t *testing.T) {
		t.Parallel()
		pair := startPair(t)
		const q = "maint-push"
		ctx := ctxT(t)
		// A push in push maintenance is answered "buffered" (it goes to the broker's
		// spool); outside it, "queued".
		probe := func(i int) string {
			res, err := pair[1].client.Push(ctx, api.PushItem{Queue: q, Payload: []byte(fmt.Sprint(i))})
			require.NoError(t, err)
			require.Len(t, res, 1)
			return res[0].Status
		}
		require.Equal(t, api.PushStatusQueued, probe(0), "pushes go to the database before the switch")

		setMaintenance(t, pair[0], "", true)
		i := 0
		require.Eventually(t, func() bool {
			i++
			return probe(i) == api.PushStatusBuffered
		}, propagation, 100*time.Millisecond, "push maintenance switched on through broker A reaches broker B")

		setMaintenance(t, pair[0], "", false)
		require.Eventually(t, func() bool {
			i++
			return probe(i) == api.PushStatusQueued
		}, propagation, 100*time.Millisecond, "and so does switching it off")
	})

	t.Run("Pop", func(t *testing.T) {
		t.Parallel()
		pair := startPair(t)
		const q = "maint-pop"
		// Far more messages than the probes below can consume, so an empty pop means
		// the pop was paused.
		payloads := make([]string, 500)
		for i := range payloads {
			payloads[i] = fmt.Sprint(i)
		}
		push(t, pair[0], q, "", payloads...)
		ctx := ctxT(t)
		probe := func() (int, error) {
			got, err := pair[1].client.Pop(ctx, client.PopOptions{Queue: q, AutoAck: true})
			if err != nil {
				return 0, err
			}
			return len(got.Messages), nil
		}
		n, err := probe()
		require.NoError(t, err)
		require.Equal(t, 1, n, "pops work before the switch")

		setMaintenance(t, pair[0], "/pop", true)
		require.Eventually(t, func() bool { n, err := probe(); return err == nil && n == 0 }, propagation, 100*time.Millisecond,
			"pop maintenance switched on through broker A reaches broker B")

		setMaintenance(t, pair[0], "/pop", false)
		require.Eventually(t, func() bool { n, err := probe(); return err == nil && n == 1 }, propagation, 100*time.Millisecond,
			"and so does switching it off")
	})
}
