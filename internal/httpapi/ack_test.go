package httpapi

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ackKeys are the keys of every ack result.
var ackKeys = sortedKeys("index", "transactionId", "success", "error", "queueName", "partitionName", "leaseReleased", "dlq", "noop")

func TestAck(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	const unknownPartition = "019dc9b7-0000-7000-8000-0000000000ff"

	t.Run("ValidationMessages", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name, path, body, msg, field string
		}{
			{"TransactionIDMissing", "/api/v1/ack", `{"partitionId":"x"}`, "transactionId is required", "transactionId"},
			{"TransactionIDNull", "/api/v1/ack", `{"transactionId":null,"partitionId":"x"}`, "transactionId is required", "transactionId"},
			{"TransactionIDNotString", "/api/v1/ack", `{"transactionId":12,"partitionId":"x"}`, "transactionId is required", "transactionId"},
			{"PartitionIDMissing", "/api/v1/ack", `{"transactionId":"t"}`, "partitionId is required to ensure message uniqueness", "partitionId"},
			{"LeaseIDNotString", "/api/v1/ack", `{"transactionId":"t","partitionId":"p","leaseId":1}`, "leaseId must be a string", "leaseId"},
			{"StatusNotString", "/api/v1/ack", `{"transactionId":"t","partitionId":"p","status":true}`, "status must be a string", "status"},
			{"GroupNotString", "/api/v1/ack", `{"transactionId":"t","partitionId":"p","consumerGroup":[]}`, "consumerGroup must be a string", "consumerGroup"},
			{"BatchMissing", "/api/v1/ack/batch", `{}`, "acknowledgments array is required", "acknowledgments"},
			{"BatchNotArray", "/api/v1/ack/batch", `{"acknowledgments":{}}`, "acknowledgments array is required", "acknowledgments"},
			{"BatchItemNotObject", "/api/v1/ack/batch", `{"acknowledgments":["t"]}`, "acknowledgments[0] must be an object", "acknowledgments[0]"},
			{"BatchItemTransactionID", "/api/v1/ack/batch",
				`{"acknowledgments":[{"transactionId":"a","partitionId":"p"},{"partitionId":"p"}]}`,
				"acknowledgments[1].transactionId is required", "acknowledgments[1].transactionId"},
			{"BatchItemPartitionID", "/api/v1/ack/batch", `{"acknowledgments":[{"transactionId":"a","partitionId":5}]}`,
				"acknowledgments[0].partitionId is required to ensure message uniqueness", "acknowledgments[0].partitionId"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				requireError(t, b.post(t, tc.path, tc.body), http.StatusBadRequest, "invalid_argument", tc.msg, tc.field)
			})
		}
	})

	t.Run("SingleAckIsOneElementArray", func(t *testing.T) {
		t.Parallel()
		pushed := b.pushOne(t, "ack-single", "", "t-1", `{}`)
		pop := b.popOne(t, "ack-single", "")
		r := b.post(t, "/api/v1/ack", fmt.Sprintf(`{"transactionId":"t-1","partitionId":%q,"leaseId":%q,"status":"completed","consumerGroup":null,"error":null}`,
			pushed["partition_id"], pop["leaseId"]))
		requireStatus(t, http.StatusOK, r)
		res := r.array(t)
		require.Len(t, res, 1)
		require.Equal(t, ackKeys, keys(res[0]))
		require.Equal(t, float64(0), res[0]["index"])
		require.Equal(t, "t-1", res[0]["transactionId"])
		require.Equal(t, true, res[0]["success"])
		require.Nil(t, res[0]["error"])
		require.Equal(t, "ack-single", res[0]["queueName"])
		require.Equal(t, "Default", res[0]["partitionName"])
		require.Equal(t, true, res[0]["leaseReleased"])
		require.Equal(t, false, res[0]["dlq"])
		require.Equal(t, false, res[0]["noop"])
	})

	t.Run("UnknownMessageAndUnknownStatus", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, "/api/v1/ack", fmt.Sprintf(`{"transactionId":"nope","partitionId":%q}`, unknownPartition))
		requireStatus(t, http.StatusOK, r)
		res := r.array(t)
		require.Len(t, res, 1)
		require.Equal(t, ackKeys, keys(res[0]))
		require.Equal(t, false, res[0]["success"])
		require.Equal(t, unresolvable, res[0]["error"])
		require.Nil(t, res[0]["queueName"])
		require.Nil(t, res[0]["partitionName"])
		require.Nil(t, res[0]["leaseReleased"], "nothing was found")

		// A partition id that is no UUID, or a transaction id too long to exist, is
		// answered without a query, in the same shape.
		for _, body := range []string{
			`{"transactionId":"nope","partitionId":"not-a-uuid"}`,
			fmt.Sprintf(`{"transactionId":%q,"partitionId":%q}`, strings.Repeat("x", 300), unknownPartition),
		} {
			r := b.post(t, "/api/v1/ack", body)
			requireStatus(t, http.StatusOK, r)
			res := r.array(t)
			require.Equal(t, ackKeys, keys(res[0]))
			require.Equal(t, []any{false, unresolvable, nil}, []any{res[0]["success"], res[0]["error"], res[0]["leaseReleased"]}, body)
		}

		// An unknown status is a failed nack (Queen 1.x), so it is judged like one: here
		// the message resolves nowhere.
		r = b.post(t, "/api/v1/ack", fmt.Sprintf(`{"transactionId":"nope","partitionId":%q,"status":"maybe"}`, unknownPartition))
		requireStatus(t, http.StatusOK, r)
		res = r.array(t)
		require.Equal(t, false, res[0]["success"])
		require.Equal(t, unresolvable, res[0]["error"])
	})

	t.Run("BatchInRequestOrderWithTopLevelGroup", func(t *testing.T) {
		t.Parallel()
		p1 := b.pushOne(t, "ack-batch", "", "b-1", `1`)
		b.pushOne(t, "ack-batch", "", "b-2", `2`)
		pop := b.popOne(t, "ack-batch", "batch=2&consumerGroup=grp")
		require.Len(t, pop["messages"], 2)
		// Per-item groups are ignored: the body-level group applies to every item.
		r := b.post(t, "/api/v1/ack/batch", fmt.Sprintf(`{"consumerGroup":"grp","acknowledgments":[
			{"transactionId":"b-2","partitionId":%[1]q,"leaseId":%[2]q,"consumerGroup":"other"},
			{"transactionId":"missing","partitionId":%[1]q},
			{"transactionId":"b-1","partitionId":%[1]q,"status":"completed"}]}`, p1["partition_id"], pop["leaseId"]))
		requireStatus(t, http.StatusOK, r)
		res := r.array(t)
		require.Len(t, res, 3)
		for i, want := range []struct {
			tx      string
			success bool
		}{{"b-2", true}, {"missing", false}, {"b-1", true}} {
			require.Equal(t, ackKeys, keys(res[i]))
			require.Equal(t, float64(i), res[i]["index"])
			require.Equal(t, want.tx, res[i]["transactionId"])
			require.Equal(t, want.success, res[i]["success"], "item %d: %v", i, res[i])
		}
		// The group "grp" consumed both messages; queue mode still sees them.
		requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop/queue/ack-batch?consumerGroup=grp"))
		require.Len(t, b.popOne(t, "ack-batch", "batch=5")["messages"], 2)
	})

	t.Run("EmptyBatchIsEmptyArray", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, "/api/v1/ack/batch", `{"acknowledgments":[]}`)
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, "[]", string(r.body))
	})
}

func TestLeaseExtend(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	leaseKeys := sortedKeys("index", "leaseId", "success", "error", "expiresAt")

	t.Run("EmptyBodyExtendsLiveLease", func(t *testing.T) {
		t.Parallel()
		b.pushOne(t, "lease-live", "", "", `1`)
		lease := b.popOne(t, "lease-live", "")["leaseId"].(string)
		for _, body := range []string{"", "{}", "null", `{"seconds":120}`, `{"seconds":null}`} {
			r := b.post(t, "/api/v1/lease/"+lease+"/extend", body)
			requireStatus(t, http.StatusOK, r)
			res := r.array(t)
			require.Len(t, res, 1)
			require.Equal(t, leaseKeys, keys(res[0]))
			require.Equal(t, float64(0), res[0]["index"])
			require.Equal(t, lease, res[0]["leaseId"])
			require.Equal(t, true, res[0]["success"], "body %q: %v", body, res[0])
			require.Nil(t, res[0]["error"])
			require.Regexp(t, regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`), res[0]["expiresAt"])
		}
	})

	t.Run("UnknownLeaseIs200Failure", func(t *testing.T) {
		t.Parallel()
		// An empty body and a body of JSON null read as {}.
		for _, body := range []string{"", "null", " null "} {
			r := b.post(t, "/api/v1/lease/019dc9b7-0000-7000-8000-000000000abc/extend", body)
			requireStatus(t, http.StatusOK, r)
			res := r.array(t)
			require.Len(t, res, 1)
			require.Equal(t, leaseKeys, keys(res[0]))
			require.Equal(t, false, res[0]["success"])
			require.Equal(t, "Lease not found", res[0]["error"])
			require.Nil(t, res[0]["expiresAt"])
		}
	})

	t.Run("SecondsMustBeAnInteger", func(t *testing.T) {
		t.Parallel()
		for _, body := range []string{`{"seconds":"60"}`, `{"seconds":1.5}`, `{"seconds":true}`} {
			requireError(t, b.post(t, "/api/v1/lease/x/extend", body), http.StatusBadRequest,
				"invalid_argument", "seconds must be an integer", "seconds")
		}
		requireError(t, b.post(t, "/api/v1/lease/x/extend", `{"seconds":-5}`), http.StatusBadRequest,
			"invalid_argument", "seconds must be between 0 (the default, 60) and 604800", "seconds")
		r := b.post(t, "/api/v1/lease/x/extend", `{`)
		requireStatus(t, http.StatusBadRequest, r)
	})
}
