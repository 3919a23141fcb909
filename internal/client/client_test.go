package client_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

func TestHeaders(t *testing.T) {
	t.Parallel()

	t.Run("EveryRequestCarriesJSONHeadersTokenAndExtras", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `{}`, client.WithToken("tok"), client.WithHeader("X-Tenant", "acme"))
		_, err := b.client.ListQueues(t.Context())
		require.NoError(t, err)
		_, err = b.client.Ack(t.Context(), api.AckRequest{TransactionID: "t", PartitionID: "p"})
		require.NoError(t, err)

		for _, r := range b.requests() {
			require.Equal(t, "application/json", r.Header.Get("Content-Type"), r.Method)
			require.Equal(t, "application/json", r.Header.Get("Accept"), r.Method)
			require.Equal(t, "Bearer tok", r.Header.Get("Authorization"), r.Method)
			require.Equal(t, "acme", r.Header.Get("X-Tenant"), r.Method)
		}
	})
	t.Run("NoTokenNoAuthorization", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `{}`)
		_, err := b.client.ListQueues(t.Context())
		require.NoError(t, err)
		_, ok := b.only(t).Header["Authorization"]
		require.False(t, ok)
	})
	t.Run("ExtraHeaderOverridesDefaultsButNotToken", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `{}`, client.WithToken("tok"),
			client.WithHeader("Accept", "*/*"), client.WithHeader("Authorization", "Basic x"))
		_, err := b.client.ListQueues(t.Context())
		require.NoError(t, err)
		r := b.only(t)
		require.Equal(t, "*/*", r.Header.Get("Accept"))
		require.Equal(t, "Bearer tok", r.Header.Get("Authorization"))
	})
}

func TestBaseURLKeepsPrefixAndDropsTrailingSlash(t *testing.T) {
	t.Parallel()

	b := answer(t, http.StatusOK, `{}`)
	c := client.New(b.srv.URL+"/queen/", client.WithToken("x"))
	_, err := c.ListQueues(t.Context())
	require.NoError(t, err)
	require.Equal(t, "/queen/api/v1/resources/queues", b.only(t).RequestURI)
}

func TestConfigure(t *testing.T) {
	t.Parallel()

	t.Run("SendsOnlySetOptionsAndDecodesEcho", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `{"configured":true,"queueId":"q-1","partitionId":"p-1","queue":"orders",
			"namespace":"billing","task":"","options":{"priority":5,"leaseTime":300,"retryLimit":3}}`)
		got, err := b.client.Configure(t.Context(), api.ConfigureRequest{
			Queue: "orders", Namespace: api.String("billing"),
			Options: &api.QueueOptions{Priority: api.Int(5), EncryptionEnabled: api.Bool(false)},
		})
		require.NoError(t, err)
		require.True(t, got.Configured)
		require.Equal(t, "q-1", got.QueueID)
		require.Equal(t, 5, got.Options.Priority)

		r := b.only(t)
		require.Equal(t, http.MethodPost, r.Method)
		require.Equal(t, "/api/v1/configure", r.RequestURI)
		require.JSONEq(t, `{"queue":"orders","namespace":"billing","options":{"priority":5,"encryptionEnabled":false}}`, r.Body)
	})
	t.Run("UpstreamDBErrorOn200IsAnError", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `{"success":false,"error":"invalid input syntax for type integer"}`)
		_, err := b.client.Configure(t.Context(), api.ConfigureRequest{Queue: "orders"})
		e := client.AsError(err)
		require.NotNil(t, e, "%v", err)
		require.Equal(t, http.StatusOK, e.StatusCode)
		require.Equal(t, "invalid input syntax for type integer", e.Message)
	})
}

var uuidV7 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestPush(t *testing.T) {
	t.Parallel()

	t.Run("SendsItemsVerbatimAndDecodesResults", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusCreated, `[
			{"index":0,"transaction_id":"t-1","status":"queued","message_id":"m-1","partition_id":"p-1","trace_id":null,"queueName":"orders"},
			{"index":1,"transaction_id":"t-1","status":"duplicate","message_id":"m-1","queueName":"orders"}]`)
		items := []api.PushItem{
			{Queue: "orders", Partition: "cust-42", Payload: json.RawMessage(`{"id":1}`), TransactionID: "t-1"},
			{Queue: "orders", Payload: json.RawMessage(`null`)},
		}
		got, err := b.client.Push(t.Context(), items...)
		require.NoError(t, err)
		require.Equal(t, []api.PushResult{
			{Index: 0, TransactionID: "t-1", Status: api.PushStatusQueued, MessageID: "m-1", PartitionID: "p-1", QueueName: "orders"},
			{Index: 1, TransactionID: "t-1", Status: api.PushStatusDuplicate, MessageID: "m-1", QueueName: "orders"},
		}, got)

		r := b.only(t)
		require.Equal(t, http.MethodPost, r.Method)
		require.Equal(t, "/api/v1/push", r.RequestURI)
		require.Equal(t, `{"items":[{"queue":"orders","partition":"cust-42","payload":{"id":1},"transactionId":"t-1"},`+
			`{"queue":"orders","payload":null}]}`, r.Body, "no transaction id is invented without retries")
	})
	t.Run("NoItemsSendsEmptyArray", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusCreated, `[]`)
		got, err := b.client.Push(t.Context())
		require.NoError(t, err)
		require.Empty(t, got)
		require.Equal(t, `{"items":[]}`, b.only(t).Body)
	})
	t.Run("ValidationErrorIsError", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusBadRequest, `{"error":"Queue must be a string","code":"invalid_argument","field":"items[0].queue"}`)
		_, err := b.client.Push(t.Context(), api.PushItem{})
		require.True(t, client.IsInvalidArgument(err), "%v", err)
		require.Equal(t, "items[0].queue", client.AsError(err).Field)
	})
	t.Run("ObjectOn200IsError", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `{"error":"connection refused"}`)
		_, err := b.client.Push(t.Context(), api.PushItem{Queue: "q"})
		require.Equal(t, "connection refused", client.AsError(err).Message)
	})
	t.Run("RetriesFillMissingTransactionIDs", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusCreated, `[]`, client.WithRetries(1))
		items := []api.PushItem{{Queue: "q"}, {Queue: "q", TransactionID: "mine"}}
		_, err := b.client.Push(t.Context(), items...)
		require.NoError(t, err)
		require.Empty(t, items[0].TransactionID, "the caller's items are not modified")

		var sent api.PushRequest
		require.NoError(t, json.Unmarshal([]byte(b.only(t).Body), &sent))
		require.Regexp(t, uuidV7, sent.Items[0].TransactionID)
		require.Equal(t, "mine", sent.Items[1].TransactionID)
	})
}

func TestAck(t *testing.T) {
	t.Parallel()

	t.Run("SendsSetFieldsAndReturnsFirstElement", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `[{"index":0,"transactionId":"t-1","success":true,"error":null,
			"queueName":"orders","partitionName":"Default","leaseReleased":true,"dlq":false}]`)
		got, err := b.client.Ack(t.Context(), api.AckRequest{TransactionID: "t-1", PartitionID: "p-1", LeaseID: "l-1"})
		require.NoError(t, err)
		require.Equal(t, api.AckResult{TransactionID: "t-1", Success: true, QueueName: api.String("orders"),
			PartitionName: api.String("Default"), LeaseReleased: api.Bool(true)}, got)

		r := b.only(t)
		require.Equal(t, http.MethodPost, r.Method)
		require.Equal(t, "/api/v1/ack", r.RequestURI)
		require.Equal(t, `{"transactionId":"t-1","partitionId":"p-1","leaseId":"l-1"}`, r.Body)
	})
	t.Run("FailedAckIsAResultNotAnError", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `[{"index":0,"transactionId":"t","success":false,"error":"Message not found",
			"queueName":null,"partitionName":null,"leaseReleased":null,"dlq":false}]`)
		got, err := b.client.Ack(t.Context(), api.AckRequest{TransactionID: "t", PartitionID: "p", Status: api.AckStatusFailed})
		require.NoError(t, err)
		require.False(t, got.Success)
		require.Equal(t, "Message not found", *got.Error)
		require.JSONEq(t, `{"transactionId":"t","partitionId":"p","status":"failed"}`, b.only(t).Body)
	})
	t.Run("DBFailureObjectIsError", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `{"success":false,"error":"deadlock detected"}`)
		_, err := b.client.Ack(t.Context(), api.AckRequest{TransactionID: "t", PartitionID: "p"})
		require.Equal(t, "deadlock detected", client.AsError(err).Message)
	})
}

func TestAckBatch(t *testing.T) {
	t.Parallel()

	t.Run("SendsGroupAndItems", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `[{"index":0,"transactionId":"t-1","success":true,"error":null},
			{"index":1,"transactionId":"t-2","success":true,"error":null,"dlq":true}]`)
		got, err := b.client.AckBatch(t.Context(), api.AckBatchRequest{ConsumerGroup: "workers", Acknowledgments: []api.AckItem{
			{TransactionID: "t-1", PartitionID: "p", LeaseID: "l", Status: api.AckStatusCompleted},
			{TransactionID: "t-2", PartitionID: "p", Status: api.AckStatusFailed, Error: "bad input"},
		}})
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.True(t, got[1].DLQ)

		r := b.only(t)
		require.Equal(t, http.MethodPost, r.Method)
		require.Equal(t, "/api/v1/ack/batch", r.RequestURI)
		require.Equal(t, `{"consumerGroup":"workers","acknowledgments":[`+
			`{"transactionId":"t-1","partitionId":"p","leaseId":"l","status":"completed"},`+
			`{"transactionId":"t-2","partitionId":"p","status":"failed","error":"bad input"}]}`, r.Body)
	})
	for _, body := range []string{"", "[]", "{}"} {
		t.Run("EmptyAnswer"+body, func(t *testing.T) {
			t.Parallel()
			b := answer(t, http.StatusOK, body)
			got, err := b.client.AckBatch(t.Context(), api.AckBatchRequest{})
			require.NoError(t, err)
			require.Empty(t, got)
			require.Equal(t, `{"acknowledgments":[]}`, b.only(t).Body)
		})
	}
}

func TestTransaction(t *testing.T) {
	t.Parallel()

	b := answer(t, http.StatusOK, `{"transactionId":"tx","success":false,
		"error":"ACK operation failed: Message not found","results":[]}`)
	got, err := b.client.Transaction(t.Context(), api.TransactionRequest{
		Operations: []api.TxOperation{
			{Type: api.TxOpAck, TransactionID: "t-1", PartitionID: "p", Status: "completed", ConsumerGroup: "stage1"},
			{Type: api.TxOpPush, Items: []api.PushItem{{Queue: "next", Payload: json.RawMessage(`{"x":1}`)}}},
		},
		RequiredLeases: []string{"l-1"},
	})
	require.NoError(t, err, "a rolled back transaction is a result")
	require.False(t, got.Success)
	require.Equal(t, "ACK operation failed: Message not found", got.Error)

	r := b.only(t)
	require.Equal(t, http.MethodPost, r.Method)
	require.Equal(t, "/api/v1/transaction", r.RequestURI)
	require.Equal(t, `{"operations":[{"type":"ack","transactionId":"t-1","partitionId":"p","status":"completed",`+
		`"consumerGroup":"stage1"},{"type":"push","items":[{"queue":"next","payload":{"x":1}}]}],"requiredLeases":["l-1"]}`, r.Body)
}

func TestExtendLease(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		seconds int
		body    string
	}{
		{"ZeroSendsEmptyObject", 0, `{}`},
		{"SecondsSent", 30, `{"seconds":30}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := answer(t, http.StatusOK, `[{"index":0,"leaseId":"l/1","success":true,"error":null,
				"expiresAt":"2026-04-26T11:05:28.267Z"}]`)
			got, err := b.client.ExtendLease(t.Context(), "l/1", tc.seconds)
			require.NoError(t, err)
			require.True(t, got.Success)
			require.Equal(t, "2026-04-26T11:05:28.267Z", *got.ExpiresAt)

			r := b.only(t)
			require.Equal(t, http.MethodPost, r.Method)
			require.Equal(t, "/api/v1/lease/l%2F1/extend", r.RequestURI)
			require.Equal(t, tc.body, r.Body)
		})
	}
}
