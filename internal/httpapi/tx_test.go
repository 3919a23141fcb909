package httpapi

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

func TestTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})

	t.Run("ValidationMessages", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name, body, msg, field string
		}{
			{"OperationsNotArray", `{"operations":"x"}`, "operations array required", "operations"},
			{"OperationsEmpty", `{"operations":[]}`, "operations array cannot be empty", "operations"},
			{"OperationNotObject", `{"operations":[1]}`, "operations[0] must be an object", "operations[0]"},
			{"UnknownType", `{"operations":[{"type":"nope"}]}`, `operations[0].type must be "ack" or "push" (got "nope")`, "operations[0].type"},
			{"TypeNotString", `{"operations":[{"type":1}]}`, "operations[0].type must be a string", "operations[0].type"},
			{"ItemsNotArray", `{"operations":[{"type":"push","items":{}}]}`, "operations[0].items must be an array", "operations[0].items"},
			{"ItemQueue", `{"operations":[{"type":"push","items":[{"queue":"a"},{"partition":"p"}]}]}`, "Queue must be a string", "operations[0].items[1].queue"},
			{"FlatPushPartition", `{"operations":[{"type":"push","queue":"a","partition":3}]}`, "Partition must be a string", "operations[0].partition"},
			{"AckTransactionID", `{"operations":[{"type":"ack","partitionId":"p"}]}`, "operations[0].transactionId is required", "operations[0].transactionId"},
			{"AckPartitionID", `{"operations":[{"type":"ack","transactionId":"t"}]}`,
				"operations[0].partitionId is required to ensure message uniqueness", "operations[0].partitionId"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				r := b.post(t, "/api/v1/transaction", tc.body)
				requireError(t, r, http.StatusBadRequest, "invalid_argument", tc.msg, tc.field)
				// The transaction's envelope, as a transaction refused by the database.
				m := r.object(t)
				require.Equal(t, false, m["success"])
				require.Equal(t, "bad_request", m["reason"])
				require.Equal(t, []any{}, m["results"])
			})
		}
	})

	t.Run("AckAndPushCommitTogether", func(t *testing.T) {
		t.Parallel()
		in := b.pushOne(t, "tx-in", "", "in-1", `{"x":1}`)
		b.popOne(t, "tx-in", "consumerGroup=stage1")
		r := b.post(t, "/api/v1/transaction", fmt.Sprintf(`{"operations":[
			{"type":"ack","transactionId":"in-1","partitionId":%q,"status":"completed","consumerGroup":"stage1"},
			{"type":"push","items":[{"queue":"tx-out","partition":"p2","payload":{"y":2},"transactionId":"out-1"},
			                        {"queue":"tx-out","partition":"p2"}]},
			{"type":"push","queue":"tx-out","partition":"p3","data":"flat","transactionId":"out-3"}],
			"requiredLeases":["019dc9b7-0000-7000-8000-000000000001"]}`, in["partition_id"]))
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, sortedKeys("transactionId", "success", "results"), keys(m))
		require.Equal(t, true, m["success"], "body: %s", r.body)
		require.True(t, queue.IsUUID(m["transactionId"].(string)))
		res := m["results"].([]any)
		require.Len(t, res, 4)
		ack := res[0].(map[string]any)
		require.Equal(t, sortedKeys("index", "type", "success", "transactionId", "error", "dlq"), keys(ack))
		require.Equal(t, "ack", ack["type"])
		require.Nil(t, ack["error"])
		for i, tx := range []string{"out-1", "", "out-3"} {
			push := res[i+1].(map[string]any)
			require.Equal(t, sortedKeys("index", "type", "success", "transactionId", "messageId", "partitionId", "queueName"), keys(push))
			require.Equal(t, float64(i+1), push["index"])
			require.Equal(t, "push", push["type"])
			require.Equal(t, true, push["success"])
			require.Equal(t, "tx-out", push["queueName"])
			if tx != "" {
				require.Equal(t, tx, push["transactionId"])
			}
		}

		out := b.popOne(t, "tx-out", "batch=10&partitions=5")
		var data []any
		for _, msg := range out["messages"].([]any) {
			data = append(data, msg.(map[string]any)["data"])
		}
		require.ElementsMatch(t, []any{map[string]any{"y": float64(2)}, map[string]any{}, "flat"}, data,
			"a missing payload is {} in a transaction; data stands in for payload")
		requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop/queue/tx-in?consumerGroup=stage1"))
	})

	t.Run("FailureIs200WithSuccessFalse", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, "/api/v1/transaction", `{"operations":[
			{"type":"push","items":[{"queue":"tx-fail","payload":1}]},
			{"type":"ack","transactionId":"ghost","partitionId":"019dc9b7-0000-7000-8000-0000000000ff"}]}`)
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, false, m["success"])
		require.Equal(t, "QTXN ack references unknown transactionId; transaction rolled back", m["error"])
		require.Equal(t, "ack_rejected", m["reason"])
		require.Len(t, m["results"], 2)
		requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop/queue/tx-fail"))
	})

	t.Run("MalformedPartitionIDRollsBackWithTheResultsBeforeIt", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, "/api/v1/transaction", `{"operations":[
			{"type":"push","items":[{"queue":"tx-badpid","transactionId":"r4","payload":1}]},
			{"type":"ack","transactionId":"x2","partitionId":"not-a-uuid"},
			{"type":"push","items":[{"queue":"tx-badpid","transactionId":"r5","payload":2}]}]}`)
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, false, m["success"])
		require.Equal(t, "ack_rejected", m["reason"])
		results := m["results"].([]any)
		require.Len(t, results, 2, "the push before the ack and the ack; nothing after it: %v", results)
		require.Equal(t, "push", results[0].(map[string]any)["type"])
		require.Equal(t, "r4", results[0].(map[string]any)["transactionId"])
		require.Equal(t, "ack", results[1].(map[string]any)["type"])
		require.EqualValues(t, 1, results[1].(map[string]any)["index"])
		requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop/queue/tx-badpid"))
	})
}
