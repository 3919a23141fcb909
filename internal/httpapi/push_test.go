package httpapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

func TestPush(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})

	t.Run("ValidationMessages", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name, body, msg, field string
		}{
			{"ItemsMissing", `{}`, "items array is required", "items"},
			{"ItemsNull", `{"items":null}`, "items array is required", "items"},
			{"ItemsNotArray", `{"items":{"queue":"q"}}`, "items array is required", "items"},
			{"ItemNotObject", `{"items":[42]}`, "items[0] must be an object", "items[0]"},
			{"QueueMissing", `{"items":[{"payload":1}]}`, "Queue must be a string", "items[0].queue"},
			{"QueueNull", `{"items":[{"queue":null}]}`, "Queue must be a string", "items[0].queue"},
			{"QueueNotString", `{"items":[{"queue":"ok"},{"queue":7}]}`, "Queue must be a string", "items[1].queue"},
			{"PartitionNotString", `{"items":[{"queue":"q","partition":1}]}`, "Partition must be a string", "items[0].partition"},
			{"TransactionIDNotString", `{"items":[{"queue":"q","transactionId":5}]}`, "transactionId must be a string", "items[0].transactionId"},
			{"TraceIDNotString", `{"items":[{"queue":"q"},{"queue":"q"},{"queue":"q","traceId":true}]}`, "traceId must be a string", "items[2].traceId"},
			{"TraceIDNotUUID", `{"items":[{"queue":"q","traceId":"nope"}]}`, "items[0].traceId must be a UUID", "items[0].traceId"},
			{"QueueEmpty", `{"items":[{"queue":""}]}`, "items[0].queue must not be empty", "items[0].queue"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				requireError(t, b.post(t, "/api/v1/push", tc.body), http.StatusBadRequest, "invalid_argument", tc.msg, tc.field)
			})
		}
	})

	t.Run("InvalidItemRejectsWholeRequest", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, "/api/v1/push", `{"items":[{"queue":"push-reject","payload":1},{"queue":3}]}`)
		requireStatus(t, http.StatusBadRequest, r)
		_, err := b.broker.QueueGet(t.Context(), "push-reject")
		require.ErrorIs(t, err, queue.ErrNotFound)
	})

	t.Run("PartitionUnsetIsDefault", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, "/api/v1/push", `{"items":[{"queue":"push-unset","partition":"","payload":1,"transactionId":"e"},
			{"queue":"push-unset","partition":null,"payload":2,"transactionId":"n"},{"queue":"push-unset","payload":3,"transactionId":"a"}]}`)
		requireStatus(t, http.StatusCreated, r)
		res := r.array(t)
		require.Len(t, res, 3)
		for _, item := range res {
			require.Equal(t, "queued", item["status"])
			require.Equal(t, res[0]["partition_id"], item["partition_id"])
		}
		r = b.get(t, "/api/v1/pop/queue/push-unset/partition/Default?batch=10")
		requireStatus(t, http.StatusOK, r)
		require.Len(t, r.object(t)["messages"], 3)
	})

	t.Run("EmptyItemsIsLiteralArray", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, "/api/v1/push", `{"items":[]}`)
		requireStatus(t, http.StatusCreated, r)
		require.Equal(t, "[]", string(r.body))
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
	})

	t.Run("QueuedAndDuplicateShapes", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, "/api/v1/push", `{"items":[
			{"queue":"push-shapes","partition":"p1","payload":{"n":1},"transactionId":"t-1",
			 "traceId":"019dc9b7-0000-7000-8000-000000000001"},
			{"queue":"push-shapes","payload":{"n":2}},
			{"queue":"push-shapes","partition":"p1","payload":{"n":3},"transactionId":"t-1"}]}`)
		requireStatus(t, http.StatusCreated, r)
		res := r.array(t)
		require.Len(t, res, 3)

		queuedKeys := sortedKeys("index", "transaction_id", "transactionId", "status", "message_id", "partition_id", "trace_id", "queueName")
		require.Equal(t, queuedKeys, keys(res[0]))
		require.Equal(t, float64(0), res[0]["index"])
		require.Equal(t, "queued", res[0]["status"])
		require.Equal(t, "t-1", res[0]["transaction_id"])
		require.Equal(t, "t-1", res[0]["transactionId"])
		require.Equal(t, "019dc9b7-0000-7000-8000-000000000001", res[0]["trace_id"])
		require.Equal(t, "push-shapes", res[0]["queueName"])
		require.True(t, queue.IsUUID(res[0]["message_id"].(string)))
		require.True(t, queue.IsUUID(res[0]["partition_id"].(string)))

		require.Equal(t, queuedKeys, keys(res[1]))
		require.Equal(t, float64(1), res[1]["index"])
		require.Nil(t, res[1]["trace_id"])
		require.NotEmpty(t, res[1]["transaction_id"], "a generated transaction id")

		require.Equal(t, sortedKeys("index", "transaction_id", "transactionId", "status", "message_id", "queueName"), keys(res[2]))
		require.Equal(t, float64(2), res[2]["index"])
		require.Equal(t, "duplicate", res[2]["status"])
		require.Equal(t, res[0]["message_id"], res[2]["message_id"], "a duplicate carries the winner's id")

		// A later request with the same key is a duplicate too.
		again := b.pushOne(t, "push-shapes", "p1", "t-1", `{"n":4}`)
		require.Equal(t, "duplicate", again["status"])
		require.Equal(t, res[0]["message_id"], again["message_id"])
	})

	t.Run("TraceIDInEveryFormPostgreSQLTakes", func(t *testing.T) {
		t.Parallel()
		// An OpenTelemetry trace id (32 hex digits), upper case, braces: stored and
		// answered in the canonical form.
		r := b.post(t, "/api/v1/push", `{"items":[
			{"queue":"push-trace","payload":1,"traceId":"4BF92F3577B34DA6A3CE929D0E0E4736"},
			{"queue":"push-trace","payload":2,"traceId":"{019dc9b7-0000-7000-8000-00000000000A}"}]}`)
		requireStatus(t, http.StatusCreated, r)
		res := r.array(t)
		require.Equal(t, "4bf92f35-77b3-4da6-a3ce-929d0e0e4736", res[0]["trace_id"])
		require.Equal(t, "019dc9b7-0000-7000-8000-00000000000a", res[1]["trace_id"])
		msgs := b.popOne(t, "push-trace", "batch=10")["messages"].([]any)
		require.Len(t, msgs, 2)
		require.Equal(t, res[0]["trace_id"], msgs[0].(map[string]any)["traceId"])
	})

	t.Run("PayloadKindsAndProducerSubIgnored", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, "/api/v1/push", `{"items":[
			{"queue":"push-payloads","payload":"<b>&","producerSub":"mallory"},
			{"queue":"push-payloads","payload":null},
			{"queue":"push-payloads"},
			{"queue":"push-payloads","payload":[1,2]}]}`)
		requireStatus(t, http.StatusCreated, r)
		pop := b.popOne(t, "push-payloads", "batch=10")
		msgs := pop["messages"].([]any)
		require.Len(t, msgs, 4)
		var data []any
		for _, m := range msgs {
			mm := m.(map[string]any)
			require.Nil(t, mm["producerSub"], "producerSub is never taken from the body")
			data = append(data, mm["data"])
		}
		require.Equal(t, []any{"<b>&", nil, nil, []any{float64(1), float64(2)}}, data)
		require.Contains(t, string(b.get(t, "/api/v1/resources/queues/push-payloads").body), `"name":"push-payloads"`)
	})
}
