package daemon_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// TestDaemonQuickstart is the README walk-through: push {"hello":"world"} to demo, pop
// it with autoAck, and find the queue empty afterwards.
func TestDaemonQuickstart(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)

	status, body := tb.raw(t, http.MethodPost, "/api/v1/push",
		`{"items":[{"queue":"demo","payload":{"hello":"world"}}]}`)
	require.Equal(t, http.StatusCreated, status, "push: %s", body)
	var pushed []api.PushResult
	require.NoError(t, json.Unmarshal(body, &pushed), "push answers a top-level array: %s", body)
	require.Len(t, pushed, 1)
	require.Equal(t, api.PushStatusQueued, pushed[0].Status)
	require.NotEmpty(t, pushed[0].MessageID)

	resp, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: "demo", AutoAck: true})
	require.NoError(t, err)
	require.Len(t, resp.Messages, 1)
	msg := resp.Messages[0]
	require.JSONEq(t, `{"hello":"world"}`, string(msg.Data))
	require.Equal(t, pushed[0].MessageID, msg.ID)
	require.Equal(t, api.DefaultPartition, msg.Partition)
	require.Empty(t, msg.LeaseID, "autoAck pops carry no lease")

	// The message was consumed at delivery: the next pop is a bare 204.
	status, body = tb.raw(t, http.MethodGet, "/api/v1/pop/queue/demo?autoAck=true", "")
	require.Equal(t, http.StatusNoContent, status)
	require.Empty(t, body, "a 204 carries no body")

	totals := queueTotals(t, tb, "demo")
	require.Equal(t, 1, totals.Total)
	require.Equal(t, 1, totals.Completed)
	require.Zero(t, totals.Pending)
}
