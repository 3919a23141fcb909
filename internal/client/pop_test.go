package client_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

func TestPopRequest(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		opts      client.PopOptions
		wantPath  string // escaped, as sent
		wantQuery url.Values
	}{
		{
			name:      "DefaultsAreAlwaysSent",
			opts:      client.PopOptions{Queue: "orders"},
			wantPath:  "/api/v1/pop/queue/orders",
			wantQuery: url.Values{"batch": {"1"}, "wait": {"false"}, "timeout": {"30000"}},
		},
		{
			name:      "DefaultPartitionUsesWildcardRoute",
			opts:      client.PopOptions{Queue: "orders", Partition: "Default", Batch: 5, Wait: true, Timeout: 1500 * time.Millisecond},
			wantPath:  "/api/v1/pop/queue/orders",
			wantQuery: url.Values{"batch": {"5"}, "wait": {"true"}, "timeout": {"1500"}},
		},
		{
			name:      "PartitionRouteEscapesSegments",
			opts:      client.PopOptions{Queue: "a b", Partition: "p/7"},
			wantPath:  "/api/v1/pop/queue/a%20b/partition/p%2F7",
			wantQuery: url.Values{"batch": {"1"}, "wait": {"false"}, "timeout": {"30000"}},
		},
		{
			name: "OptionalParamsWhenSet",
			opts: client.PopOptions{Queue: "orders", ConsumerGroup: "workers", AutoAck: true, Partitions: 3,
				SubscriptionMode: api.SubscriptionModeNew, SubscriptionFrom: "2026-04-26T10:00:00Z",
				Namespace: "billing", Task: "invoice"},
			wantPath: "/api/v1/pop/queue/orders",
			wantQuery: url.Values{"batch": {"1"}, "wait": {"false"}, "timeout": {"30000"},
				"consumerGroup": {"workers"}, "autoAck": {"true"}, "partitions": {"3"},
				"subscriptionMode": {"new"}, "subscriptionFrom": {"2026-04-26T10:00:00Z"},
				"namespace": {"billing"}, "task": {"invoice"}},
		},
		{
			name:      "SinglePartitionClaimNotSent",
			opts:      client.PopOptions{Queue: "orders", Partitions: 1},
			wantPath:  "/api/v1/pop/queue/orders",
			wantQuery: url.Values{"batch": {"1"}, "wait": {"false"}, "timeout": {"30000"}},
		},
		{
			name:     "NamespaceTaskRoute",
			opts:     client.PopOptions{Namespace: "billing", Task: "invoice", Wait: true},
			wantPath: "/api/v1/pop",
			wantQuery: url.Values{"batch": {"1"}, "wait": {"true"}, "timeout": {"30000"},
				"namespace": {"billing"}, "task": {"invoice"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := answer(t, http.StatusNoContent, "")
			got, err := b.client.Pop(t.Context(), tc.opts)
			require.NoError(t, err)
			require.Empty(t, got.Messages)

			r := b.only(t)
			require.Equal(t, http.MethodGet, r.Method)
			path, _, _ := strings.Cut(r.RequestURI, "?")
			require.Equal(t, tc.wantPath, path)
			require.Equal(t, tc.wantQuery, r.Query)
			require.Empty(t, r.Body)
		})
	}
}

func TestPopNeedsATarget(t *testing.T) {
	t.Parallel()

	b := answer(t, http.StatusNoContent, "")
	_, err := b.client.Pop(t.Context(), client.PopOptions{ConsumerGroup: "g"})
	require.ErrorContains(t, err, "queue, namespace or task is required")
	require.Empty(t, b.requests())
}

func TestPopResponses(t *testing.T) {
	t.Parallel()

	t.Run("DecodesMessages", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `{"success":true,"queue":"events","partition":"p7","partitionId":"pid",
			"leaseId":"l","consumerGroup":"__QUEUE_MODE__","partitionsClaimed":1,"messages":[
			{"id":"m","transactionId":"t","traceId":null,"data":{"event":"click"},"producerSub":null,
			 "createdAt":"2026-04-26T10:59:28.267966Z","partitionId":"pid","partition":"p7","leaseId":"l",
			 "consumerGroup":"__QUEUE_MODE__"}]}`)
		got, err := b.client.Pop(t.Context(), client.PopOptions{Queue: "events"})
		require.NoError(t, err)
		require.Len(t, got.Messages, 1)
		m := got.Messages[0]
		require.Equal(t, "t", m.TransactionID)
		require.Equal(t, "pid", m.PartitionID)
		require.JSONEq(t, `{"event":"click"}`, string(m.Data))
		require.Nil(t, m.TraceID)
	})
	for name, body := range map[string]string{
		"EmptyBody":            "",
		"EmptyMessages":        `{"messages":[]}`,
		"UpstreamNoPartition":  `{"success":false,"error":"no_available_partition","messages":[]}`,
		"UpstreamLongPollDone": `{"success":true,"queue":"q","partition":"","partitionId":null,"leaseId":null,"consumerGroup":"g","messages":[]}`,
	} {
		t.Run(name+"IsNoMessages", func(t *testing.T) {
			t.Parallel()
			b := answer(t, http.StatusOK, body)
			got, err := b.client.Pop(t.Context(), client.PopOptions{Queue: "q"})
			require.NoError(t, err)
			require.Empty(t, got.Messages)
		})
	}
	t.Run("ServerErrorIsError", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusServiceUnavailable, `{"error":"database unavailable","code":"unavailable"}`)
		_, err := b.client.Pop(t.Context(), client.PopOptions{Queue: "q"})
		require.True(t, client.IsUnavailable(err), "%v", err)
	})
}

func TestPopDeadlineIsTimeoutPlusSlack(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		timeout time.Duration
		want    time.Duration
	}{
		{"Explicit", 2 * time.Second, 7 * time.Second},
		{"Default", 0, 35 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var remaining time.Duration
			hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				deadline, ok := r.Context().Deadline()
				require.True(t, ok, "pop requests carry a deadline")
				remaining = time.Until(deadline)
				return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: r}, nil
			})}
			c := client.New("http://queen.invalid", client.WithHTTPClient(hc))
			_, err := c.Pop(t.Context(), client.PopOptions{Queue: "q", Wait: true, Timeout: tc.timeout})
			require.NoError(t, err)
			require.InDelta(t, tc.want.Seconds(), remaining.Seconds(), 1)
		})
	}
}
