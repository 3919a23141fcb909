package broker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// TestAutopilotWidth: the width starts at 1, doubles while pops claim their whole
// width with room in the batch, is shared among concurrent pops, shrinks to what was
// claimed and stays within 1…AutopilotMaxWidth.
func TestAutopilotWidth(t *testing.T) {
	t.Parallel()
	a := newAutopilot()
	pop := func(claimed int, room bool) int {
		w := a.start("q", "g")
		a.finish("q", "g", w, min(claimed, w), room)
		return w
	}
	require.Equal(t, 1, pop(99, true))
	require.Equal(t, 2, pop(99, true))
	require.Equal(t, 4, pop(99, false), "a full batch leaves the width")
	require.Equal(t, 4, pop(1, true))
	require.Equal(t, 1, pop(99, true), "claimed 1 of 4: the estimate fell to 1")

	for range 20 {
		pop(99, true)
	}
	require.Equal(t, AutopilotMaxWidth, pop(99, true))

	// Concurrent pops share the estimate: 4 ready partitions, two pops at once.
	a.finish("q2", "g", a.start("q2", "g"), 1, true)
	a.finish("q2", "g", a.start("q2", "g"), 2, true)
	w1 := a.start("q2", "g")
	w2 := a.start("q2", "g")
	require.Equal(t, []int{4, 2}, []int{w1, w2})
	a.finish("q2", "g", w1, w1, false)
	a.finish("q2", "g", w2, w2, false)
	require.Equal(t, 4, a.start("q2", "g"), "finished pops no longer share it")
	require.Equal(t, 1, a.start("other", "g"), "each (queue, group) has its own estimate")
}

// TestNormalizeAutopilot: the 1.x meaning of omitted knobs.
func TestNormalizeAutopilot(t *testing.T) {
	t.Parallel()
	b := &Broker{cfg: DefaultConfig()}
	for _, tc := range []struct {
		name            string
		req             queue.PopRequest
		batch           int
		ctlBatch, ctlWd bool
	}{
		{"NoAutopilot", queue.PopRequest{Queue: "q", ConsumerGroup: "g"}, 0, false, false},
		{"Controlled", queue.PopRequest{Queue: "q", ConsumerGroup: "g", Autopilot: true}, 100, true, true},
		{"ExplicitBatch", queue.PopRequest{Queue: "q", ConsumerGroup: "g", Autopilot: true, Batch: 7}, 7, false, true},
		{"ExplicitWidth", queue.PopRequest{Queue: "q", ConsumerGroup: "g", Autopilot: true, Partitions: 3}, 100, true, false},
		{"QueueMode", queue.PopRequest{Queue: "q", Autopilot: true}, AutopilotAbsentBatch, false, false},
		{"PartitionRoute", queue.PopRequest{Queue: "q", Partition: "p", ConsumerGroup: "g", Autopilot: true},
			AutopilotAbsentBatch, false, false},
		{"Discovery", queue.PopRequest{Namespace: "n", ConsumerGroup: "g", Autopilot: true},
			AutopilotAbsentBatch, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := tc.req
			b.normalizeAutopilot(&req)
			require.Equal(t, tc.batch, req.Batch)
			require.Equal(t, []bool{tc.ctlBatch, tc.ctlWd}, []bool{req.AutopilotBatch, req.AutopilotPartitions})
		})
	}
}
