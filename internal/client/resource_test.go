package client_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/client"
)

func TestResources(t *testing.T) {
	t.Parallel()

	t.Run("ListQueues", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `{"queues":[{"id":"q","name":"orders","namespace":"","task":"",
			"createdAt":"x","partitions":2,"messages":{"total":3,"pending":1,"processing":0}}]}`)
		got, err := b.client.ListQueues(t.Context())
		require.NoError(t, err)
		require.Len(t, got.Queues, 1)
		require.Equal(t, 2, got.Queues[0].Partitions)
		require.Equal(t, 3, got.Queues[0].Messages.Total)

		r := b.only(t)
		require.Equal(t, http.MethodGet, r.Method)
		require.Equal(t, "/api/v1/resources/queues", r.RequestURI)
		require.Empty(t, r.Body)
	})
	t.Run("ListQueuesEmptyBody", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, "")
		got, err := b.client.ListQueues(t.Context())
		require.NoError(t, err)
		require.Empty(t, got.Queues)
	})
	t.Run("GetQueue", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `{"id":"q","name":"a.b","partitions":[{"id":"p","name":"Default",
			"stats":{"total":5,"deadLetter":1},"oldestMessage":null,"newestMessage":"x"}],"totals":{"total":5}}`)
		got, err := b.client.GetQueue(t.Context(), "a.b")
		require.NoError(t, err)
		require.Equal(t, "a.b", got.Name)
		require.Equal(t, 1, got.Partitions[0].Stats.DeadLetter)
		require.Nil(t, got.Partitions[0].OldestMessage)

		r := b.only(t)
		require.Equal(t, http.MethodGet, r.Method)
		require.Equal(t, "/api/v1/resources/queues/a.b", r.RequestURI)
	})
	t.Run("GetQueueNotFound", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusNotFound, `{"error":"Queue not found","code":"not_found"}`)
		_, err := b.client.GetQueue(t.Context(), "nope")
		require.True(t, client.IsNotFound(err), "%v", err)
		require.Equal(t, http.StatusNotFound, client.StatusCode(err))
	})
	t.Run("GetQueueUpstreamNotFoundOn200", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `{"error":"Queue not found"}`)
		_, err := b.client.GetQueue(t.Context(), "nope")
		require.True(t, client.IsNotFound(err), "%v", err)
		require.Equal(t, http.StatusOK, client.StatusCode(err))
	})
	t.Run("DeleteQueue", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `{"deleted":true,"queue":"x y","existed":true}`)
		got, err := b.client.DeleteQueue(t.Context(), "x y")
		require.NoError(t, err)
		require.True(t, got.Existed)

		r := b.only(t)
		require.Equal(t, http.MethodDelete, r.Method)
		require.Equal(t, "/api/v1/resources/queues/x%20y", r.RequestURI)
		require.Empty(t, r.Body)
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	})
	t.Run("HealthUnhealthyReturnsBodyAndError", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusServiceUnavailable, `{"status":"unhealthy","database":"disconnected",
			"server":"s","worker_id":1,"version":"1.0.0","shared_state":{"enabled":false},"queen":{}}`)
		got, err := b.client.Health(t.Context())
		require.True(t, client.IsUnavailable(err), "%v", err)
		require.Equal(t, "disconnected", got.Database)
		require.Equal(t, 1, got.WorkerID)
		require.Equal(t, "/health", b.only(t).RequestURI)
	})
	t.Run("HealthOK", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `{"status":"healthy","database":"connected","version":"1.0.0"}`)
		got, err := b.client.Health(t.Context())
		require.NoError(t, err)
		require.Equal(t, "healthy", got.Status)
	})
}
