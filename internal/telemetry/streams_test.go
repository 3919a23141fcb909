package telemetry_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// TestStreamCounters drives cycles through the broker and reads the stream families:
// a committed cycle counts its state ops, sink items and its messages in the queue
// counters; a refused one and an invalid one count only as cycles.
func TestStreamCounters(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := t.Context()
	for _, l := range [][]string{{"result", "committed"}, {"result", "failed"}, {"result", "error"}} {
		require.Equal(t, 0.0, tb.gauge(t, "queen_stream_cycles_total", l...), l)
	}
	reg, err := tb.b.StreamRegister(ctx, queue.StreamRegistration{Name: "tel", SourceQueue: "tel-src", SinkQueue: "tel-sink", ConfigHash: "h"})
	require.NoError(t, err)
	tb.push(t, "tel-src", 2)
	req := queue.PopRequest{Queue: "tel-src", ConsumerGroup: "streams.tel", Batch: 2}
	require.NoError(t, tb.b.NormalizePop(&req))
	pop, err := tb.b.Pop(ctx, req)
	require.NoError(t, err)
	require.Len(t, pop.Messages, 2)
	last := pop.Messages[1]
	sink := func(txid string) queue.PushItem {
		return queue.PushItem{Queue: "tel-sink", Payload: json.RawMessage(`1`), TransactionID: txid}
	}
	cycle := queue.StreamCycle{QueryID: reg.QueryID, PartitionID: last.PartitionID, ConsumerGroup: "streams.tel", ReleaseLease: true,
		StateOps: []queue.StateOp{{Type: queue.StateOpUpsert, Key: "a", Value: json.RawMessage(`1`)}, {Type: queue.StateOpDelete, Key: "b"},
			{Type: queue.StateOpUpsert, Key: "c", Value: json.RawMessage(`2`)}},
		Push: []queue.PushItem{sink("s1"), sink("s1")},
		Ack:  &queue.StreamAck{TransactionID: last.TransactionID, LeaseID: pop.LeaseID, Count: 2}}
	res, err := tb.b.StreamCycle(ctx, cycle)
	require.NoError(t, err)
	require.True(t, res.Success, res.Error)

	retry := cycle
	retry.Push = []queue.PushItem{sink("s2")}
	res, err = tb.b.StreamCycle(ctx, retry)
	require.NoError(t, err)
	require.False(t, res.Success, "the ack's message is already acknowledged")
	_, err = tb.b.StreamCycle(ctx, queue.StreamCycle{QueryID: "not-a-uuid", PartitionID: last.PartitionID})
	require.Error(t, err)

	_, err = tb.b.StreamState(ctx, queue.StateFilter{QueryID: reg.QueryID, PartitionID: last.PartitionID})
	require.NoError(t, err)

	require.Equal(t, 1.0, tb.gauge(t, "queen_stream_cycles_total", "result", "committed"))
	require.Equal(t, 1.0, tb.gauge(t, "queen_stream_cycles_total", "result", "failed"))
	require.Equal(t, 1.0, tb.gauge(t, "queen_stream_cycles_total", "result", "error"))
	require.Equal(t, 2.0, tb.gauge(t, "queen_stream_state_ops_total", "type", "upsert"))
	require.Equal(t, 1.0, tb.gauge(t, "queen_stream_state_ops_total", "type", "delete"))
	require.Equal(t, 1.0, tb.gauge(t, "queen_stream_sink_pushes_total", "status", "queued"))
	require.Equal(t, 1.0, tb.gauge(t, "queen_stream_sink_pushes_total", "status", "duplicate"))
	require.Equal(t, 1.0, tb.gauge(t, "queen_stream_state_reads_total"))
	// The sink message and the ack count in the queue families, not as requests.
	require.Equal(t, 1.0, tb.gauge(t, "queen_messages_pushed_total", "queue", "tel-sink"))
	require.Equal(t, 2.0, tb.gauge(t, "queen_messages_acked_total", "queue", "tel-src", "result", "success"))
	require.Equal(t, 1.0, tb.gauge(t, "queen_requests_total", "op", "push"), "the source push only")
	require.Equal(t, 0.0, tb.gauge(t, "queen_requests_total", "op", "ack"))
}
