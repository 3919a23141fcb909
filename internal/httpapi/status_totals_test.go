package httpapi

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// pushPartitions pushes one message to each of n partitions of queueName, in batches.
func (b *testBundle) pushPartitions(t *testing.T, queueName string, n int) {
	t.Helper()
	const batch = 2500
	for start := 0; start < n; start += batch {
		items := make([]any, 0, batch)
		for i := start; i < min(start+batch, n); i++ {
			items = append(items, map[string]any{"queue": queueName, "partition": fmt.Sprintf("p%05d", i),
				"payload": map[string]any{"i": i}})
		}
		requireStatus(t, http.StatusCreated, b.post(t, "/api/v1/push", mustJSON(t, map[string]any{"items": items})))
	}
}

// TestStatusTotalsCountEveryPartition: the totals of the overview, /status and the
// namespace view cover every partition, also past the 10 000 the per-partition lists
// stop at: a queue sorted after 10 000 partitions of another still counts.
func TestStatusTotalsCountEveryPartition(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.pushPartitions(t, "a.big", 10000)
	b.pushOne(t, "z.late", "only", "late-1", `{}`)
	b.pushOne(t, "z.late", "only", "late-2", `{}`)
	// Queue mode consumes one message of z.late, so completed counts past the cut too.
	pop := b.popOne(t, "z.late", "batch=1")
	m := obj(t, arr(t, pop["messages"])[0])
	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/ack", mustJSON(t, map[string]any{
		"transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"],
		"status": "completed"})))

	ov := b.get(t, "/api/v1/resources/overview").object(t)
	require.EqualValues(t, 10001, ov["partitions"], "overview partitions")
	msgs := obj(t, ov["messages"])
	require.EqualValues(t, 10002, msgs["total"], "overview total")
	require.EqualValues(t, 10001, msgs["pending"], "overview pending")
	require.EqualValues(t, 1, msgs["completed"], "overview completed")

	st := b.get(t, "/api/v1/status").object(t)
	sm := obj(t, st["messages"])
	require.EqualValues(t, 10002, sm["total"], "status total")
	require.EqualValues(t, 10001, sm["pending"], "status pending")
	require.EqualValues(t, 1, sm["completed"], "status completed")
	late := findBy(t, st["queues"], "name", "z.late")
	require.EqualValues(t, 1, late["totalConsumed"], "status queues: z.late")
	big := findBy(t, st["queues"], "name", "a.big")
	require.EqualValues(t, 10000, big["partitions"], "status queues: a.big")

	ns := b.get(t, "/api/v1/resources/namespaces").object(t)
	z := findBy(t, ns["namespaces"], "namespace", "z")
	require.EqualValues(t, 1, z["partitions"], "namespace z")
	require.EqualValues(t, 2, obj(t, z["messages"])["total"], "namespace z")
}

// TestStatusQueueTotalsPastTheList: GET /api/v1/status/queues/{queue} lists at most
// 10 000 partitions and says when it cut the list, but its totals, partition count and
// consumed count cover every partition; partitionLimit=0 lists none.
func TestStatusQueueTotalsPastTheList(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.pushPartitions(t, "wide", 10001)
	b.pushOne(t, "wide", "p10000", "extra", `{}`)
	// Queue mode consumes a message of the last partition, past the listed ones.
	pop := b.popOne(t, "wide/partition/p10000", "batch=1")
	m := obj(t, arr(t, pop["messages"])[0])
	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/ack", mustJSON(t, map[string]any{
		"transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"],
		"status": "completed"})))

	check := func(t *testing.T, d map[string]any, listed int, truncated bool) {
		t.Helper()
		require.Len(t, arr(t, d["partitions"]), listed)
		require.EqualValues(t, 10001, d["partitionCount"])
		require.Equal(t, truncated, d["partitionsTruncated"])
		totals := obj(t, d["totals"])
		require.EqualValues(t, 10002, totals["total"])
		require.EqualValues(t, 10001, totals["pending"])
		require.EqualValues(t, 1, totals["completed"])
		require.EqualValues(t, 1, totals["totalConsumed"])
		require.EqualValues(t, 10002, obj(t, totals["messages"])["total"])
	}
	r := b.get(t, "/api/v1/status/queues/wide")
	requireStatus(t, http.StatusOK, r)
	check(t, r.object(t), 10000, true)
	r = b.get(t, "/api/v1/status/queues/wide?partitionLimit=0")
	requireStatus(t, http.StatusOK, r)
	check(t, r.object(t), 0, true)
	requireStatus(t, http.StatusBadRequest, b.get(t, "/api/v1/status/queues/wide?partitionLimit=10001"))

	b.pushOne(t, "narrow", "", "n-1", `{}`)
	d := b.get(t, "/api/v1/status/queues/narrow?partitionLimit=5").object(t)
	require.Len(t, arr(t, d["partitions"]), 1)
	require.EqualValues(t, 1, d["partitionCount"])
	require.Equal(t, false, d["partitionsTruncated"])
}

// TestRecentMessagesOfAWideQueue: the newest messages of a queue wider than the 10 000
// partitions the recent-messages view takes its candidates from are still first: it
// takes the partitions with the newest heads, so a message pushed last to a partition
// created last is on the first page.
func TestRecentMessagesOfAWideQueue(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.pushPartitions(t, "wide.recent", 10050)
	b.pushOne(t, "wide.recent", "zz-newest", "newest-1", `{}`)
	first := b.get(t, "/api/v1/status/queues/wide.recent/messages?limit=1").array(t)
	require.Len(t, first, 1)
	require.Equal(t, "newest-1", obj(t, first[0])["transactionId"])
}
