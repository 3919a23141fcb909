package api_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
)

// compact removes insignificant whitespace so that example bodies compare byte for byte,
// key order included, and escapes <, > and & the way encoding/json does.
func compact(t *testing.T, s string) string {
	t.Helper()
	var buf, out bytes.Buffer
	require.NoError(t, json.Compact(&buf, []byte(s)))
	json.HTMLEscape(&out, buf.Bytes())
	return out.String()
}

func TestMarshalMatchesSpec(t *testing.T) {
	t.Parallel()

	ack := api.AckResult{
		Index: 0, TransactionID: "t-1", Success: true,
		QueueName: api.String("orders"), PartitionName: api.String("Default"),
		LeaseReleased: api.Bool(false),
	}
	msgs := []api.Message{{
		ID: "m-1", TransactionID: "t-1", Data: json.RawMessage(`{"event":"click"}`),
		CreatedAt: "2026-04-26T10:59:28.267966Z", PartitionID: "p-uuid", Partition: "p7",
		LeaseID: "019dc9b7-...", ConsumerGroup: "__QUEUE_MODE__", Queue: "events",
	}}

	tests := []struct {
		name string
		v    any
		want string
	}{
		{
			name: "PushQueuedRendersNullTraceID",
			v: []api.PushResult{
				{Index: 0, TransactionID: "019dc9c2-...", Status: api.PushStatusQueued, MessageID: "<uuid>", PartitionID: "<uuid>", QueueName: "orders"},
				{Index: 1, TransactionID: "dup-1", Status: api.PushStatusDuplicate, MessageID: "<id of existing>", QueueName: "orders"},
			},
			want: `[{"index":0,"transaction_id":"019dc9c2-...","status":"queued","message_id":"<uuid>",
			  "partition_id":"<uuid>","trace_id":null,"queueName":"orders"},
			 {"index":1,"transaction_id":"dup-1","status":"duplicate","message_id":"<id of existing>",
			  "queueName":"orders"}]`,
		},
		{
			name: "PushDuplicateIgnoresStrayFields",
			v: api.PushResult{Index: 1, TransactionID: "dup-1", Status: api.PushStatusDuplicate, MessageID: "m",
				PartitionID: "should-not-render", TraceID: api.String("x"), QueueName: "orders"},
			want: `{"index":1,"transaction_id":"dup-1","status":"duplicate","message_id":"m","queueName":"orders"}`,
		},
		{
			name: "PushQueuedHelperAddsCamelAlias",
			v:    api.QueuedResult(2, "t-9", "m-9", "p-9", api.String("tr-9"), "orders"),
			want: `{"index":2,"transaction_id":"t-9","transactionId":"t-9","status":"queued","message_id":"m-9",
			  "partition_id":"p-9","trace_id":"tr-9","queueName":"orders"}`,
		},
		{
			name: "PushBuffered",
			v:    api.BufferedResult(0, "orders", "Default", "t-1"),
			want: `{"index":0,"status":"buffered","queue":"orders","partition":"Default","transactionId":"t-1"}`,
		},
		{
			name: "PushBufferedWithoutClientID",
			v:    api.BufferedResult(0, "orders", "Default", ""),
			want: `{"index":0,"status":"buffered","queue":"orders","partition":"Default"}`,
		},
		{
			name: "PushFailed",
			v:    api.FailedResult(0, "orders", "Default", "", "File buffer write failed"),
			want: `{"index":0,"status":"failed","queue":"orders","partition":"Default","error":"File buffer write failed"}`,
		},
		{
			name: "PushRequest",
			v: api.PushRequest{Items: []api.PushItem{{Queue: "orders", Partition: "cust-42",
				Payload: json.RawMessage(`{"id":1}`), TransactionID: "019dc9c2-...", TraceID: "019dc9b7-..."}}},
			want: `{"items":[{"queue":"orders","partition":"cust-42","payload":{"id":1},
			  "transactionId":"019dc9c2-...","traceId":"019dc9b7-..."}]}`,
		},
		{
			name: "PushItemMinimal",
			v:    api.PushItem{Queue: "orders"},
			want: `{"queue":"orders"}`,
		},
		{
			name: "AckResultRendersNullError",
			v:    []api.AckResult{ack},
			want: `[{"index":0,"transactionId":"t-1","success":true,"error":null,"queueName":"orders",
			  "partitionName":"Default","leaseReleased":false,"dlq":false,"noop":false}]`,
		},
		{
			name: "AckResultUnresolvableRendersNulls",
			v:    api.AckResult{TransactionID: "t-1", Error: api.String("unresolvable: ...")},
			want: `{"index":0,"transactionId":"t-1","success":false,"error":"unresolvable: ...","queueName":null,
			  "partitionName":null,"leaseReleased":null,"dlq":false,"noop":false}`,
		},
		{
			name: "AckRequestOmitsUnset",
			v:    api.AckRequest{TransactionID: "t-1", PartitionID: "p"},
			want: `{"transactionId":"t-1","partitionId":"p"}`,
		},
		{
			name: "AckRequestFull",
			v: api.AckRequest{TransactionID: "t-1", PartitionID: "<uuid>", LeaseID: "019dc9b7-...",
				Status: api.AckStatusCompleted, ConsumerGroup: "workers"},
			want: `{"transactionId":"t-1","partitionId":"<uuid>","leaseId":"019dc9b7-...","status":"completed",
			  "consumerGroup":"workers"}`,
		},
		{
			name: "AckBatchRequest",
			v: api.AckBatchRequest{ConsumerGroup: "workers", Acknowledgments: []api.AckItem{
				{TransactionID: "t-1", PartitionID: "<uuid>", LeaseID: "...", Status: "completed"},
				{TransactionID: "t-2", PartitionID: "<uuid>", Status: "failed", Error: "bad input"}}},
			want: `{"consumerGroup":"workers","acknowledgments":[
			  {"transactionId":"t-1","partitionId":"<uuid>","leaseId":"...","status":"completed"},
			  {"transactionId":"t-2","partitionId":"<uuid>","status":"failed","error":"bad input"}]}`,
		},
		{
			name: "PopResponse",
			v: api.PopResponse{Success: true, Queue: "events", Partition: "p7", PartitionID: "p-uuid",
				LeaseID: "019dc9b7-...", ConsumerGroup: "__QUEUE_MODE__", PartitionsClaimed: 2, Messages: msgs},
			want: `{"success":true,"queue":"events","partition":"p7","partitionId":"p-uuid",
			 "leaseId":"019dc9b7-...","consumerGroup":"__QUEUE_MODE__","partitionsClaimed":2,
			 "messages":[
			  {"id":"m-1","transactionId":"t-1","traceId":null,"data":{"event":"click"},
			   "producerSub":null,"createdAt":"2026-04-26T10:59:28.267966Z","partitionId":"p-uuid",
			   "partition":"p7","leaseId":"019dc9b7-...","consumerGroup":"__QUEUE_MODE__",
			   "queue":"events","retryCount":0}]}`,
		},
		{
			name: "PopResponseEmptyMessagesIsArray",
			v:    api.PopResponse{Success: true},
			want: `{"success":true,"queue":"","partition":"","partitionId":"","leaseId":"","consumerGroup":"",
			 "partitionsClaimed":0,"messages":[]}`,
		},
		{
			name: "TransactionRequest",
			v: api.TransactionRequest{
				Operations: []api.TxOperation{
					{Type: api.TxOpAck, TransactionID: "t-1", PartitionID: "<uuid>", Status: "completed", ConsumerGroup: "stage1"},
					{Type: api.TxOpPush, Items: []api.PushItem{{Queue: "next", Partition: "p2", Payload: json.RawMessage(`{"x":1}`)}}},
				},
				RequiredLeases: []string{"019dc9b7-..."},
			},
			want: `{"operations":[
			   {"type":"ack","transactionId":"t-1","partitionId":"<uuid>","status":"completed",
			    "consumerGroup":"stage1"},
			   {"type":"push","items":[{"queue":"next","partition":"p2","payload":{"x":1}}]}],
			 "requiredLeases":["019dc9b7-..."]}`,
		},
		{
			name: "TransactionResponse",
			v: api.TransactionResponse{TransactionID: "<uuid generated for this call>", Success: true, Results: []api.TxResult{
				{Index: 0, Type: api.TxOpAck, Success: true, TransactionID: "t-1"},
				{Index: 1, Type: api.TxOpPush, Success: true, TransactionID: "<tx>", MessageID: "<uuid>", PartitionID: "<uuid>", QueueName: "next"},
			}},
			want: `{"transactionId":"<uuid generated for this call>","success":true,
			 "results":[{"index":0,"type":"ack","success":true,"transactionId":"t-1","error":null,"dlq":false},
			            {"index":1,"type":"push","success":true,"transactionId":"<tx>","messageId":"<uuid>",
			             "partitionId":"<uuid>","queueName":"next"}]}`,
		},
		{
			name: "TransactionFailure",
			v:    api.TransactionResponse{TransactionID: "x", Error: "ACK operation failed: Message not found"},
			want: `{"transactionId":"x","success":false,"error":"ACK operation failed: Message not found","results":[]}`,
		},
		{
			name: "LeaseExtendEmptyRequest",
			v:    api.LeaseExtendRequest{},
			want: `{}`,
		},
		{
			name: "LeaseExtendResult",
			v: []api.LeaseExtendResult{{LeaseID: "019dc9b7-...", Success: true,
				ExpiresAt: api.String(api.FormatMillis(time.Date(2026, 4, 26, 11, 5, 28, 267_000_000, time.UTC)))}},
			want: `[{"index":0,"leaseId":"019dc9b7-...","success":true,"error":null,
			  "expiresAt":"2026-04-26T11:05:28.267Z"}]`,
		},
		{
			name: "LeaseExtendFailure",
			v:    api.LeaseExtendResult{LeaseID: "l", Error: api.String("Lease not found")},
			want: `{"index":0,"leaseId":"l","success":false,"error":"Lease not found","expiresAt":null}`,
		},
		{
			name: "ErrorBodyIsFlat",
			v:    api.ErrorBody{Error: "queue is required"},
			want: `{"error":"queue is required"}`,
		},
		{
			name: "ErrorBodyWithCode",
			v:    api.ErrorBody{Error: "queue is required", Code: api.ErrorCodeInvalidArgument, Field: "queue", RequestID: "r1"},
			want: `{"error":"queue is required","code":"invalid_argument","field":"queue","request_id":"r1"}`,
		},
		{
			name: "ErrorBodyDBFailure",
			v:    api.ErrorBody{Success: api.Bool(false), Error: "boom"},
			want: `{"success":false,"error":"boom"}`,
		},
		{
			// queen-proxy's 429: the 429 fields sit between field and request_id.
			name: "ErrorBodyProxyRateLimited",
			v: api.ErrorBody{Error: "slow down", Code: api.ErrorCodeRateLimited, Limit: "requests",
				RetryAfterMs: 250, RequestID: "r1"},
			want: `{"error":"slow down","code":"rate_limited","limit":"requests","retryAfterMs":250,"request_id":"r1"}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(tc.v)
			require.NoError(t, err)
			require.Equal(t, compact(t, tc.want), string(got))
		})
	}
}
