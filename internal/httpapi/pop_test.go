package httpapi

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPop(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})

	t.Run("EmptyIs204WithoutBody", func(t *testing.T) {
		t.Parallel()
		r := b.get(t, "/api/v1/pop/queue/pop-empty?batch=1&wait=false")
		requireStatus(t, http.StatusNoContent, r)
		require.Empty(t, r.body)

		r = b.get(t, "/api/v1/pop/queue/pop-empty/partition/p9")
		requireStatus(t, http.StatusNoContent, r)
		require.Empty(t, r.body)
	})

	t.Run("LongPollTimeoutIs204", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		r := b.get(t, "/api/v1/pop/queue/pop-longpoll?wait=true&timeout=200")
		requireStatus(t, http.StatusNoContent, r)
		require.Empty(t, r.body)
		require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	})

	t.Run("ResponseShape", func(t *testing.T) {
		t.Parallel()
		pushed := b.pushOne(t, "pop-shape", "p7", "t-7", `{"event":"click"}`)
		m := b.popOne(t, "pop-shape", "batch=5&namespace=ignored&task=ignored")
		require.Equal(t, sortedKeys("success", "queue", "partition", "partitionId", "leaseId", "consumerGroup",
			"partitionsClaimed", "messages"), keys(m))
		require.Equal(t, true, m["success"])
		require.Equal(t, "pop-shape", m["queue"])
		require.Equal(t, "p7", m["partition"])
		require.Equal(t, pushed["partition_id"], m["partitionId"])
		require.Equal(t, "__QUEUE_MODE__", m["consumerGroup"])
		require.Equal(t, float64(1), m["partitionsClaimed"])
		require.NotEmpty(t, m["leaseId"])

		msgs := m["messages"].([]any)
		require.Len(t, msgs, 1)
		msg := msgs[0].(map[string]any)
		require.Equal(t, sortedKeys("id", "transactionId", "traceId", "data", "producerSub", "createdAt", "partitionId",
			"partition", "leaseId", "consumerGroup", "queue", "retryCount"), keys(msg))
		require.Equal(t, pushed["message_id"], msg["id"])
		require.Equal(t, "t-7", msg["transactionId"])
		require.Nil(t, msg["traceId"])
		require.Nil(t, msg["producerSub"])
		require.Equal(t, map[string]any{"event": "click"}, msg["data"])
		require.Regexp(t, regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`), msg["createdAt"])
		require.Equal(t, pushed["partition_id"], msg["partitionId"])
		require.Equal(t, "p7", msg["partition"])
		require.Equal(t, m["leaseId"], msg["leaseId"])
		require.Equal(t, "__QUEUE_MODE__", msg["consumerGroup"])
		require.Equal(t, "pop-shape", msg["queue"])
		require.Equal(t, float64(0), msg["retryCount"])
	})

	t.Run("PartitionRouteAndAutoAck", func(t *testing.T) {
		t.Parallel()
		b.pushOne(t, "pop-auto", "p1", "", `1`)
		b.pushOne(t, "pop-auto", "p2", "", `2`)
		r := b.get(t, "/api/v1/pop/queue/pop-auto/partition/p2?autoAck=1&consumerGroup=g1")
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, "p2", m["partition"])
		require.Equal(t, "", m["leaseId"], "autoAck pops carry an empty lease id")
		require.Equal(t, "g1", m["consumerGroup"])
		msg := m["messages"].([]any)[0].(map[string]any)
		require.Equal(t, float64(2), msg["data"])
		require.Equal(t, "", msg["leaseId"])
		require.Equal(t, "g1", msg["consumerGroup"])

		// autoAck=yes is not true: the lease is taken.
		m = b.popOne(t, "pop-auto", "autoAck=yes&consumerGroup=g2&batch=2")
		require.NotEmpty(t, m["leaseId"])
	})

	t.Run("PathParamsArePercentDecoded", func(t *testing.T) {
		t.Parallel()
		b.pushOne(t, "pop.dec", "a b/c", "", `"x"`)
		r := b.get(t, "/api/v1/pop/queue/pop.dec/partition/a%20b%2Fc")
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, "a b/c", r.object(t)["partition"])
	})

	t.Run("QueryValidation", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name, query, msg, field string
		}{
			{"BatchGarbage", "batch=abc", "batch must be an integer", "batch"},
			{"BatchZero", "batch=0", "batch must be between 1 and 10000", "batch"},
			{"BatchNegative", "batch=-3", "batch must be between 1 and 10000", "batch"},
			{"TimeoutGarbage", "timeout=soon", "timeout must be an integer", "timeout"},
			{"TimeoutNegative", "timeout=-1", "timeout must not be negative", "timeout"},
			{"PartitionsGarbage", "partitions=1.5", "partitions must be an integer", "partitions"},
			{"BatchFractionOnly", "batch=.0", "batch must be an integer", "batch"},
			{"BatchExponent", "batch=1e1", "batch must be an integer", "batch"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				requireError(t, b.get(t, "/api/v1/pop/queue/pop-validate?"+tc.query),
					http.StatusBadRequest, "invalid_argument", tc.msg, tc.field)
			})
		}
	})

	t.Run("IntegersWithAZeroFraction", func(t *testing.T) {
		t.Parallel()
		// As a client that formats its numbers as floats sends them.
		b.pushOne(t, "pop-float", "", "f1", `1`)
		b.pushOne(t, "pop-float", "", "f2", `2`)
		r := b.get(t, "/api/v1/pop/queue/pop-float?batch=2.0&timeout=30000.00&wait=false&partitions=1.0")
		requireStatus(t, http.StatusOK, r)
		require.Len(t, r.object(t)["messages"], 2)
	})

	t.Run("ClientGoneWritesNothingAndUnparks", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Options{}) // its own broker: ParkedPolls counts this request only
		ctx, cancel := context.WithCancel(t.Context())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet,
			b.srv.URL+"/api/v1/pop/queue/pop-gone?wait=true&timeout=30000", nil)
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() {
			resp, err := b.srv.Client().Do(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		require.Eventually(t, func() bool { return b.broker.ParkedPolls() > 0 }, 5*time.Second, 10*time.Millisecond)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		require.Eventually(t, func() bool { return b.broker.ParkedPolls() == 0 }, 5*time.Second, 10*time.Millisecond)
	})
}
