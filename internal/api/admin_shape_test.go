package api_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
)

// TestAdminShapesMatchSpec renders the message, DLQ and trace answers and compares
// them byte for byte (key order included) with upstream's example answers plus the
// additive keys (total, pagination, queueName).
func TestAdminShapesMatchSpec(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		v    any
		want string
	}{
		{
			name: "MessageList",
			v: api.MessageList{
				Messages: []api.MessageSummary{{
					ID: "<uuid>", TransactionID: "t-1", PartitionID: "<uuid>", QueuePath: "orders/Default",
					Queue: "orders", Partition: "Default", Namespace: "billing", Task: "invoice",
					Status: api.MessageStatusCompleted, QueueStatus: api.MessageStatusCompleted,
					BusStatus: api.BusStatus{ConsumedBy: 1, TotalGroups: 1}, CreatedAt: "...",
				}},
				Mode:       api.MessageListMode{HasQueueMode: true, Type: api.ModeQueue},
				Total:      1,
				Pagination: api.Pagination{Limit: 200},
				Limit:      200,
			},
			want: `{"messages":[{"id":"<uuid>","transactionId":"t-1","partitionId":"<uuid>","queuePath":"orders/Default",
			   "queue":"orders","partition":"Default","namespace":"billing","task":"invoice",
			   "status":"completed","queueStatus":"completed","busStatus":{"consumedBy":1,"totalGroups":1},
			   "traceId":null,"producerSub":null,"queuePriority":0,"createdAt":"...","leaseExpiresAt":null}],
			  "mode":{"hasQueueMode":true,"busGroupsCount":0,"type":"queue"},
			  "total":1,"pagination":{"limit":200,"offset":0},"limit":200,"offset":0,"hasMore":false}`,
		},
		{
			name: "MessageListEmptyIsArray",
			v:    api.MessageList{Mode: api.MessageListMode{Type: api.ModeNone}, Pagination: api.Pagination{Limit: 200}, Limit: 200},
			want: `{"messages":[],"mode":{"hasQueueMode":false,"busGroupsCount":0,"type":"none"},"total":0,
			  "pagination":{"limit":200,"offset":0},"limit":200,"offset":0,"hasMore":false}`,
		},
		{
			name: "MessageDetail",
			v: api.MessageDetail{
				ID: "<uuid>", TransactionID: "t-1", PartitionID: "<uuid>", QueuePath: "orders/Default",
				Queue: "orders", Partition: "Default", Status: api.MessageStatusPending,
				Payload: json.RawMessage(`{"x":1}`), CreatedAt: "...",
				QueueConfig: api.MessageQueueConfig{LeaseTime: 300, RetryLimit: 3, RetryDelay: 1000, TTL: 3600},
				Mode:        api.MessageMode{HasQueueMode: true, Type: api.ModeQueue},
				ConsumerGroups: []api.MessageConsumerGroup{
					{Name: api.QueueModeGroup},
				},
			},
			want: `{"id":"<uuid>","transactionId":"t-1","partitionId":"<uuid>","queuePath":"orders/Default",
			  "queue":"orders","partition":"Default","namespace":"","task":"","status":"pending",
			  "payload":{"x":1},"isEncrypted":false,"traceId":null,"producerSub":null,"createdAt":"...",
			  "errorMessage":null,"retryCount":null,"leaseExpiresAt":null,
			  "queueConfig":{"leaseTime":300,"retryLimit":3,"retryDelay":1000,"ttl":3600,"priority":0},
			  "mode":{"hasQueueMode":true,"busGroupsCount":0,"consumedByGroups":0,"type":"queue"},
			  "consumerGroups":[{"name":"__QUEUE_MODE__","consumed":false,"leaseExpiresAt":null}]}`,
		},
		{
			name: "MessageDetailNilPayloadAndGroups",
			v:    api.MessageDetail{},
			want: `{"id":"","transactionId":"","partitionId":"","queuePath":"","queue":"","partition":"",
			  "namespace":"","task":"","status":"","payload":null,"isEncrypted":false,"traceId":null,
			  "producerSub":null,"createdAt":"","errorMessage":null,"retryCount":null,"leaseExpiresAt":null,
			  "queueConfig":{"leaseTime":0,"retryLimit":0,"retryDelay":0,"ttl":0,"priority":0},
			  "mode":{"hasQueueMode":false,"busGroupsCount":0,"consumedByGroups":0,"type":""},"consumerGroups":[]}`,
		},
		{
			name: "MessageDelete",
			v: api.MessageDeleteResponse{Success: true, PartitionID: "<uuid>", TransactionID: "t-1",
				Message: api.MessageDeleted},
			want: `{"success":true,"partitionId":"<uuid>","transactionId":"t-1","message":"Message deleted successfully"}`,
		},
		{
			name: "DLQList",
			v: api.DLQList{
				Messages: []api.DLQMessage{{
					ID: "<message uuid>", TransactionID: "t-1", PartitionID: "<uuid>", Queue: "orders",
					QueueName: "orders", Partition: "Default", ConsumerGroup: "workers",
					ErrorMessage: api.String("Retries exhausted"), RetryCount: 3, Data: json.RawMessage(`{"x":1}`),
					CreatedAt: "...", FailedAt: "...", DLQID: "<dlq row uuid>",
				}},
				Total:      1,
				Pagination: api.Pagination{Limit: 100},
			},
			want: `{"messages":[{"id":"<message uuid>","transactionId":"t-1","partitionId":"<uuid>","queue":"orders",
			   "queueName":"orders","partition":"Default","consumerGroup":"workers","errorMessage":"Retries exhausted",
			   "retryCount":3,"data":{"x":1},"producerSub":null,"createdAt":"...","failedAt":"...","dlqId":"<dlq row uuid>"}],
			  "total":1,"pagination":{"limit":100,"offset":0}}`,
		},
		{
			name: "DLQListEmpty",
			v:    api.DLQList{Pagination: api.Pagination{Limit: 100}},
			want: `{"messages":[],"total":0,"pagination":{"limit":100,"offset":0}}`,
		},
		{
			name: "TraceRequest",
			v: api.TraceRequest{TransactionID: "t-1", PartitionID: "<uuid>", ConsumerGroup: "workers",
				TraceNames: []string{"order-flow"}, EventType: "info", Data: json.RawMessage(`{"text":"started"}`)},
			want: `{"transactionId":"t-1","partitionId":"<uuid>","consumerGroup":"workers",
			  "traceNames":["order-flow"],"eventType":"info","data":{"text":"started"}}`,
		},
		{
			name: "TraceCreate",
			v:    api.TraceCreateResponse{Success: true, TraceID: "<uuid>"},
			want: `{"success":true,"traceId":"<uuid>"}`,
		},
		{
			name: "TraceList",
			v: api.TraceList{Traces: []api.Trace{
				{ID: "<uuid>", EventType: "info", Data: json.RawMessage(`{}`), ConsumerGroup: "workers",
					WorkerID: "3", CreatedAt: "...", TraceNames: []string{"order-flow"}},
				{ID: "<uuid2>", EventType: "info", Data: json.RawMessage(`1`), ConsumerGroup: "workers",
					WorkerID: "3", CreatedAt: "..."},
			}},
			want: `{"traces":[{"id":"<uuid>","event_type":"info","data":{},"consumer_group":"workers",
			  "worker_id":"3","created_at":"...","trace_names":["order-flow"]},
			  {"id":"<uuid2>","event_type":"info","data":1,"consumer_group":"workers",
			  "worker_id":"3","created_at":"...","trace_names":[]}]}`,
		},
		{
			name: "TraceListEmpty",
			v:    api.TraceList{},
			want: `{"traces":[]}`,
		},
		{
			name: "TraceByName",
			v: api.TraceByNameList{
				Traces: []api.TraceByName{{ID: "<uuid>", TransactionID: "t-1", PartitionID: "<uuid>",
					EventType: "info", Data: json.RawMessage(`{}`), ConsumerGroup: "workers", WorkerID: "3",
					CreatedAt: "...", QueueName: "orders", PartitionName: "Default",
					MessagePayload: json.RawMessage(`{"x":1}`), TraceNames: []string{"order-flow"}}},
				Total:      1,
				Pagination: api.Pagination{Limit: 100},
			},
			want: `{"traces":[{"id":"<uuid>","transaction_id":"t-1","partition_id":"<uuid>","event_type":"info",
			  "data":{},"consumer_group":"workers","worker_id":"3","created_at":"...","queue_name":"orders",
			  "partition_name":"Default","message_payload":{"x":1},"trace_names":["order-flow"]}],
			  "total":1,"pagination":{"limit":100,"offset":0}}`,
		},
		{
			name: "TraceByNameEmpty",
			v:    api.TraceByNameList{Pagination: api.Pagination{Limit: 100}},
			want: `{"traces":[],"total":0,"pagination":{"limit":100,"offset":0}}`,
		},
		{
			name: "TraceNames",
			v: api.TraceNameList{
				TraceNames: []api.TraceNameCount{{TraceName: "order-flow", TraceCount: 3, MessageCount: 2, LastSeen: "..."}},
				Total:      1, Pagination: api.Pagination{Limit: 50},
			},
			want: `{"trace_names":[{"trace_name":"order-flow","trace_count":3,"message_count":2,"last_seen":"..."}],
			  "total":1,"pagination":{"limit":50,"offset":0}}`,
		},
		{
			name: "TraceNamesEmpty",
			v:    api.TraceNameList{Pagination: api.Pagination{Limit: 50}},
			want: `{"trace_names":[],"total":0,"pagination":{"limit":50,"offset":0}}`,
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
