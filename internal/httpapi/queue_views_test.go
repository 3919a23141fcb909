package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStatusQueueHasEveryOption: GET /api/v1/status/queues/{queue} adds the whole
// stored option set as options, equal to the configure echo, and keeps its other
// keys.
func TestStatusQueueHasEveryOption(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	r := b.post(t, "/api/v1/configure", `{"queue":"opt-q","options":{"leaseTime":42,"retryLimit":7,"retryDelay":250,
		"priority":3,"maxSize":900,"ttl":600,"delayedProcessing":2,"windowBuffer":1,"retentionSeconds":86400,
		"completedRetentionSeconds":60,"maxWaitTimeSeconds":30,"retentionEnabled":true,"deadLetterQueue":true}}`)
	requireStatus(t, http.StatusOK, r)
	echo := r.object(t)["options"].(map[string]any)
	require.Len(t, echo, len(queueOptions))
	b.pushed(t, "opt-q", "p0", "t", `1`)

	m := b.list(t, "/api/v1/status/queues/opt-q")
	require.Equal(t, sortedKeys("queue", "partitions", "partitionCount", "partitionsTruncated", "totals", "options",
		"consumerGroups"), keys(m))
	require.Equal(t, echo, m["options"])
	var o map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b.get(t, "/api/v1/status/queues/opt-q").body, &o))
	for _, opt := range queueOptions {
		require.Contains(t, string(o["options"]), `"`+opt.name+`":`, opt.name)
	}
	q := m["queue"].(map[string]any)
	require.Equal(t, map[string]any{"leaseTime": float64(42), "retryLimit": float64(7), "retryDelay": float64(250),
		"ttl": float64(600), "maxQueueSize": float64(900), "deadLetterQueue": true}, q["config"])
	require.Equal(t, float64(3), q["priority"])
}

// TestPartitionListTotal: GET /api/v1/resources/partitions counts the partitions
// across pages in total.
func TestPartitionListTotal(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	for _, p := range []string{"p1", "p2", "p3"} {
		b.pushed(t, "pt-a", p, "", `1`)
	}
	b.pushed(t, "pt-b", "p1", "", `1`)

	m := b.list(t, "/api/v1/resources/partitions?queue=pt-a&limit=2")
	require.Equal(t, sortedKeys("partitions", "pagination", "total"), keys(m))
	require.Len(t, rows(t, m, "partitions"), 2)
	require.Equal(t, float64(3), m["total"])
	require.Equal(t, map[string]any{"limit": float64(2), "offset": float64(0)}, m["pagination"])
	m = b.list(t, "/api/v1/resources/partitions?queue=pt-a&offset=5")
	require.Empty(t, rows(t, m, "partitions"))
	require.Equal(t, float64(3), m["total"])
	require.Equal(t, float64(4), b.list(t, "/api/v1/resources/partitions?limit=1")["total"])
}

// TestQueueCountersAddUp: the queue views' counters are queue mode's, and pending,
// processing, completed and dead-lettered add up to the total whatever other groups
// dead-lettered, in every view that shows them.
func TestQueueCountersAddUp(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	const q = "counters-add-up"
	b.pushN(t, q, q, 3)
	// Two groups each complete q-1 and q-3 and dead-letter q-2.
	for _, g := range []string{"ga", "gb"} {
		msgs := b.popPartition(t, q, "Default", g, 3)
		res := b.ackItems(t, g, item(msgs[0], "completed"), item(msgs[1], "dlq"), item(msgs[2], "completed"))
		require.Equal(t, []any{true, true, true}, field(res, "success"), "%v", res)
	}
	counters := func(t *testing.T) []map[string]any {
		t.Helper()
		detail := b.get(t, "/api/v1/resources/queues/"+q).object(t)
		status := b.get(t, "/api/v1/status/queues/"+q).object(t)
		return []map[string]any{obj(t, detail["totals"]), obj(t, obj(t, status["totals"])["messages"])}
	}
	for _, c := range counters(t) {
		require.Equal(t, map[string]any{"total": float64(3), "pending": float64(3), "processing": float64(0),
			"completed": float64(0), "failed": float64(0), "deadLetter": float64(0)}, c, "queue mode has consumed nothing")
	}
	// Queue mode consumes: q-2 dead-lettered (once, however many rows), the rest completed.
	msgs := b.popPartition(t, q, "Default", "", 3)
	b.ackItems(t, "", item(msgs[0], "completed"), item(msgs[1], "dlq"), item(msgs[2], "completed"))
	for _, c := range counters(t) {
		require.Equal(t, map[string]any{"total": float64(3), "pending": float64(0), "processing": float64(0),
			"completed": float64(2), "failed": float64(1), "deadLetter": float64(1)}, c)
	}
}
