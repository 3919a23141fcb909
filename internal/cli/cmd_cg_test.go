package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
)

// TestShowGroupsDelivery: the group list and a group's view say where its conflation
// policy (last-value delivery) is on.
func TestShowGroupsDelivery(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	showGroups(&tw{w: &buf}, []api.ConsumerGroupSummary{
		{Name: "prices", QueueName: "ticks", State: "Stable", Conflation: true},
		{Name: "audit", QueueName: "ticks", State: "Stable"},
	})
	lines := strings.Split(buf.String(), "\n")
	require.Contains(t, lines[0], "DELIVERY")
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "prices"):
			require.Contains(t, l, "last value")
		case strings.HasPrefix(l, "audit"):
			require.Contains(t, l, "every message")
		}
	}

	buf.Reset()
	showGroup(&tw{w: &buf}, api.ConsumerGroupDetail{
		"ticks":  {Conflation: true, Partitions: []api.ConsumerGroupPartition{{Partition: "eu"}}},
		"orders": {Partitions: []api.ConsumerGroupPartition{{Partition: "Default"}}},
	})
	out := buf.String()
	require.Contains(t, out, "ticks (last value)")
	require.NotContains(t, out, "orders (")
}

// TestShowGroupLagsMarksLastValue: the lag table of a queue (queenctl queue, health)
// marks the groups that conflate on it.
func TestShowGroupLagsMarksLastValue(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	showGroupLags(&tw{w: &buf}, []api.ConsumerGroupLag{
		{Group: "prices", Queue: "ticks", Conflation: true},
		{Group: "audit", Queue: "ticks"},
	})
	out := buf.String()
	require.Contains(t, out, "prices (last value)")
	require.NotContains(t, out, "audit (")
}
