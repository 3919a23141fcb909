package api_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
)

func TestResourceAndConfigureShapes(t *testing.T) {
	t.Parallel()

	echo := api.QueueOptionsEcho{Priority: 5, LeaseTime: 300, RetryLimit: 3, RetryDelay: 1000, TTL: 3600, RetentionSeconds: 3600,
		DedupWindowSeconds: 3600, RetentionSinkHoldMaxSeconds: 604800}

	tests := []struct {
		name string
		v    any
		want string
	}{
		{
			name: "ConfigureRequestSendsOnlySetOptions",
			v: api.ConfigureRequest{Queue: "orders", Namespace: api.String("billing"), Task: api.String("invoice"),
				Options: &api.QueueOptions{LeaseTime: api.Int(300), RetryLimit: api.Int(3), Priority: api.Int(5), RetentionSeconds: api.Int(3600)}},
			want: `{"queue":"orders","namespace":"billing","task":"invoice",
			 "options":{"leaseTime":300,"retryLimit":3,"priority":5,"retentionSeconds":3600}}`,
		},
		{
			name: "ConfigureRequestExplicitZeroIsSent",
			v:    api.ConfigureRequest{Queue: "q", Options: &api.QueueOptions{RetryLimit: api.Int(0), EncryptionEnabled: api.Bool(false)}},
			want: `{"queue":"q","options":{"retryLimit":0,"encryptionEnabled":false}}`,
		},
		{
			name: "ConfigureRequestBare",
			v:    api.ConfigureRequest{Queue: "q"},
			want: `{"queue":"q"}`,
		},
		{
			name: "ConfigureRequestReplace",
			v:    api.ConfigureRequest{Queue: "q", Mode: api.ConfigureModeReplace},
			want: `{"queue":"q","mode":"replace"}`,
		},
		{
			name: "ConfigureResponse",
			v: api.ConfigureResponse{Configured: true, QueueID: "<uuid>", PartitionID: "<uuid of Default>",
				Queue: "orders", Namespace: "billing", Task: "invoice", Options: echo},
			want: `{"configured":true,"queueId":"<uuid>","partitionId":"<uuid of Default>","queue":"orders",
			 "namespace":"billing","task":"invoice",
			 "options":{"priority":5,"leaseTime":300,"retryLimit":3,"retryDelay":1000,"maxSize":0,
			  "ttl":3600,"deadLetterQueue":false,"dlqAfterMaxRetries":false,"delayedProcessing":0,
			  "windowBuffer":0,"retentionSeconds":3600,"completedRetentionSeconds":0,
			  "retentionEnabled":false,"encryptionEnabled":false,"maxWaitTimeSeconds":0,
			  "minPopWaitTime":0,"dedupWindowSeconds":3600,"retentionSinkHold":"","retentionSinkHoldMaxSeconds":604800}}`,
		},
		{
			name: "QueueList",
			v: api.QueueList{Queues: []api.QueueSummary{{ID: "<uuid>", Name: "orders", Namespace: "billing", Task: "invoice",
				CreatedAt: "...", Partitions: 4, Messages: api.QueueMessageCounts{Total: 10, Pending: 2, Processing: 1}}}},
			want: `{"queues":[{"id":"<uuid>","name":"orders","namespace":"billing","task":"invoice",
			  "createdAt":"...","partitions":4,"messages":{"total":10,"pending":2,"processing":1,"completed":0}}]}`,
		},
		{
			name: "QueueListEmptyIsArray",
			v:    api.QueueList{},
			want: `{"queues":[]}`,
		},
		{
			name: "QueueDetail",
			v: api.QueueDetail{ID: "<uuid>", Name: "orders", Namespace: "billing", Task: "invoice", CreatedAt: "...",
				Partitions: []api.PartitionDetail{{ID: "<uuid>", Name: "Default", CreatedAt: "...",
					Stats: api.Counters{Total: 5, Pending: 1, Completed: 4}, NewestMessage: api.String("...")}},
				Totals: api.Counters{Total: 5, Pending: 1, Completed: 4}},
			want: `{"id":"<uuid>","name":"orders","namespace":"billing","task":"invoice","createdAt":"...",
			 "partitions":[{"id":"<uuid>","name":"Default","createdAt":"...",
			   "stats":{"total":5,"pending":1,"processing":0,"completed":4,"failed":0,"deadLetter":0},
			   "oldestMessage":null,"newestMessage":"..."}],
			 "totals":{"total":5,"pending":1,"processing":0,"completed":4,"failed":0,"deadLetter":0}}`,
		},
		{
			name: "QueueDetailWithOptions",
			v: api.QueueDetail{Name: "q", Options: &echo,
				EnforcedOptions: &api.EnforcedOptions{TTL: false, RetryDelay: true, MaxSize: true}},
			want: `{"id":"","name":"q","namespace":"","task":"","createdAt":"","partitions":[],
			 "totals":{"total":0,"pending":0,"processing":0,"completed":0,"failed":0,"deadLetter":0},
			 "options":{"priority":5,"leaseTime":300,"retryLimit":3,"retryDelay":1000,"maxSize":0,
			  "ttl":3600,"deadLetterQueue":false,"dlqAfterMaxRetries":false,"delayedProcessing":0,
			  "windowBuffer":0,"retentionSeconds":3600,"completedRetentionSeconds":0,
			  "retentionEnabled":false,"encryptionEnabled":false,"maxWaitTimeSeconds":0,
			  "minPopWaitTime":0,"dedupWindowSeconds":3600,"retentionSinkHold":"","retentionSinkHoldMaxSeconds":604800},
			 "enforcedOptions":{"ttl":false,"retryDelay":true,"maxSize":true}}`,
		},
		{
			name: "QueueDetailNoPartitionsIsArray",
			v:    api.QueueDetail{Name: "q"},
			want: `{"id":"","name":"q","namespace":"","task":"","createdAt":"","partitions":[],
			 "totals":{"total":0,"pending":0,"processing":0,"completed":0,"failed":0,"deadLetter":0}}`,
		},
		{
			name: "QueueDelete",
			v:    api.QueueDeleteResponse{Deleted: true, Queue: "orders"},
			want: `{"deleted":true,"queue":"orders","existed":false}`,
		},
		{
			name: "Health",
			v: api.Health{Status: api.HealthStatusHealthy, Database: api.DatabaseConnected, Server: "<free text>",
				WorkerID: 3, Version: "1.0.0", SharedState: map[string]any{"enabled": false},
				Queen: map[string]any{"worker_id": 3, "status": "active"}},
			want: `{"status":"healthy","database":"connected","server":"<free text>","worker_id":3,
			 "version":"1.0.0","shared_state":{"enabled":false},"queen":{"status":"active","worker_id":3}}`,
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

// TestDecodeReencode decodes upstream example bodies into the wire types and encodes
// them back: the bytes must not change, so the tags used for decoding agree with the
// rendered shape.
func TestDecodeReencode(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		into func() any
		body string
	}{
		{"PushResults", func() any { return &[]api.PushResult{} },
			`[{"index":0,"transaction_id":"a","status":"queued","message_id":"m","partition_id":"p","trace_id":null,"queueName":"orders"},
			  {"index":1,"transaction_id":"dup-1","status":"duplicate","message_id":"m","queueName":"orders"},
			  {"index":2,"status":"buffered","queue":"orders","partition":"Default","transactionId":"t"}]`},
		{"AckResults", func() any { return &[]api.AckResult{} },
			`[{"index":0,"transactionId":"t-1","success":true,"error":null,"queueName":"orders",
			  "partitionName":"Default","leaseReleased":true,"dlq":false,"noop":false}]`},
		{"Transaction", func() any { return &api.TransactionResponse{} },
			`{"transactionId":"x","success":true,"results":[
			  {"index":0,"type":"ack","success":true,"transactionId":"t-1","error":null,"dlq":true},
			  {"index":1,"type":"push","success":true,"transactionId":"t","messageId":"m","partitionId":"p","queueName":"next"}]}`},
		{"Pop", func() any { return &api.PopResponse{} },
			`{"success":true,"queue":"events","partition":"p7","partitionId":"p","leaseId":"l","consumerGroup":"g",
			  "partitionsClaimed":1,"messages":[{"id":"m","transactionId":"t","traceId":"tr","data":[1,"x",null],
			  "producerSub":"alice","createdAt":"2026-04-26T10:59:28.267966Z","partitionId":"p","partition":"p7",
			  "leaseId":"l","consumerGroup":"g","queue":"events","retryCount":2}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := tc.into()
			require.NoError(t, json.Unmarshal([]byte(tc.body), v))
			got, err := json.Marshal(v)
			require.NoError(t, err)
			require.Equal(t, compact(t, tc.body), string(got))
		})
	}
}

func TestDecodeTreatsNullAsAbsent(t *testing.T) {
	t.Parallel()

	var ack api.AckRequest
	require.NoError(t, json.Unmarshal([]byte(`{"transactionId":"t","partitionId":"p","consumerGroup":null,"error":null}`), &ack))
	require.Equal(t, api.AckRequest{TransactionID: "t", PartitionID: "p"}, ack)

	var cfg api.ConfigureRequest
	require.NoError(t, json.Unmarshal([]byte(`{"queue":"q","namespace":null,"task":null}`), &cfg))
	require.Nil(t, cfg.Namespace)
	require.Nil(t, cfg.Task)

	var push api.PushRequest
	require.NoError(t, json.Unmarshal([]byte(`{"items":[{"queue":"q","payload":null},{"queue":"q"}]}`), &push))
	require.Equal(t, json.RawMessage("null"), push.Items[0].Payload, "explicit null payload is kept")
	require.Nil(t, push.Items[1].Payload, "absent payload stays nil")
}

func TestTimeFormats(t *testing.T) {
	t.Parallel()

	ts := time.Date(2026, 4, 26, 12, 59, 28, 267966123, time.FixedZone("CEST", 2*3600))
	require.Equal(t, "2026-04-26T10:59:28.267966Z", api.FormatMicros(ts))
	require.Equal(t, "2026-04-26T10:59:28.267Z", api.FormatMillis(ts))
	require.Equal(t, "2026-04-26T10:59:28.000000Z", api.FormatMicros(ts.Truncate(time.Second)))

	parsed, err := time.Parse(time.RFC3339Nano, api.FormatMicros(ts))
	require.NoError(t, err)
	require.True(t, parsed.Equal(ts.Truncate(time.Microsecond)))
}

func TestPushResultID(t *testing.T) {
	t.Parallel()

	require.Equal(t, "a", api.PushResult{TransactionID: "a", TransactionIDCamel: "b"}.ID())
	require.Equal(t, "b", api.PushResult{TransactionIDCamel: "b"}.ID())
}
