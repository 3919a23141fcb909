package cellsim_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/cellsim"
)

// TestHistory feeds the checker histories with one fault each and requires it to
// count exactly that fault.
func TestHistory(t *testing.T) {
	t.Parallel()
	groups := []string{"g1", "g2"}
	msg := func(seq int) cellsim.Payload { return cellsim.Payload{Tenant: "t1", Partition: 0, Seq: seq} }
	// pushed records n messages of t1's partition 0.
	pushed := func(t *testing.T, n int) *cellsim.History {
		h := cellsim.NewHistory()
		for s := range n {
			require.NoError(t, h.Pushed(msg(s)))
		}
		return h
	}
	// consume delivers and acks seqs to group.
	consume := func(h *cellsim.History, group string, seqs ...int) {
		for _, s := range seqs {
			h.Delivered("t1", group, msg(s))
			h.Acked(group, msg(s), true)
		}
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T) cellsim.Counts
		want cellsim.Counts
	}{
		{"Clean", func(t *testing.T) cellsim.Counts {
			h := pushed(t, 3)
			consume(h, "g1", 0, 1, 2)
			consume(h, "g2", 0, 1, 2)
			c, _ := h.Finish(groups)
			return c
		}, cellsim.Counts{Pushed: 3, Consumed: 6, Deliveries: 6}},
		{"Lost", func(t *testing.T) cellsim.Counts {
			h := pushed(t, 3)
			consume(h, "g1", 0, 1, 2)
			consume(h, "g2", 0, 1)
			c, ex := h.Finish(groups)
			require.Equal(t, []string{"t1-p0-2 lost for group g2"}, ex)
			return c
		}, cellsim.Counts{Pushed: 3, Consumed: 5, Deliveries: 5, Lost: 1}},
		{"DuplicatedAfterAck", func(t *testing.T) cellsim.Counts {
			h := pushed(t, 2)
			consume(h, "g1", 0, 1, 1)
			consume(h, "g2", 0, 1)
			c, _ := h.Finish(groups)
			return c
		}, cellsim.Counts{Pushed: 2, Consumed: 4, Deliveries: 5, Duplicated: 1}},
		{"RedeliveredAfterFailedAck", func(t *testing.T) cellsim.Counts {
			h := pushed(t, 1)
			h.Delivered("t1", "g1", msg(0))
			h.Acked("g1", msg(0), false)
			consume(h, "g1", 0)
			consume(h, "g2", 0)
			c, _ := h.Finish(groups)
			return c
		}, cellsim.Counts{Pushed: 1, Consumed: 2, Deliveries: 3, Redelivered: 1, AckFailed: 1}},
		{"OutOfOrder", func(t *testing.T) cellsim.Counts {
			h := pushed(t, 3)
			consume(h, "g1", 0, 2, 1)
			consume(h, "g2", 0, 1, 2)
			c, _ := h.Finish(groups)
			return c
		}, cellsim.Counts{Pushed: 3, Consumed: 6, Deliveries: 6, OutOfOrder: 2}},
		{"ForeignAndUnpushed", func(t *testing.T) cellsim.Counts {
			h := pushed(t, 1)
			consume(h, "g1", 0)
			consume(h, "g2", 0, 1)
			h.Delivered("t2", "g1", msg(0))
			c, _ := h.Finish(groups)
			return c
		}, cellsim.Counts{Pushed: 1, Consumed: 3, Deliveries: 4, Foreign: 1, Unpushed: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, tc.run(t))
		})
	}
}

// TestHistoryPushOrder requires a partition's pushes to be recorded in sequence.
func TestHistoryPushOrder(t *testing.T) {
	t.Parallel()
	h := cellsim.NewHistory()
	require.NoError(t, h.Pushed(cellsim.Payload{Tenant: "t1", Seq: 0}))
	require.Error(t, h.Pushed(cellsim.Payload{Tenant: "t1", Seq: 2}))
}
