package browsertest

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/queenmq/queen/internal/daemontest"
)

// pushPartitions pushes one message to each of n partitions p00000… of queueName.
func pushPartitions(t *testing.T, c *client, queueName string, n int) {
	t.Helper()
	const batch = 2500
	for start := 0; start < n; start += batch {
		items := make([]obj, 0, batch)
		for i := start; i < min(start+batch, n); i++ {
			items = append(items, obj{"queue": queueName, "partition": fmt.Sprintf("p%05d", i), "payload": obj{"i": i}})
		}
		callJSON[[]obj](t, c, "POST", "/api/v1/push", obj{"items": items}, http.StatusCreated)
	}
}

// TestQueuePastTenThousandPartitions: the queue page of a queue with more partitions
// than the status view lists counts every one of them, and asks for no partition list
// to do so (the Partitions tab pages them).
func TestQueuePastTenThousandPartitions(t *testing.T) {
	t.Parallel()
	browser(t)
	srv := daemontest.Start(t, daemontest.Options{})
	c := newClient(srv.URL, "")
	pushPartitions(t, c, "wide", 10001)
	callJSON[[]obj](t, c, "POST", "/api/v1/push", obj{"items": []obj{{"queue": "wide", "partition": "p10000",
		"payload": obj{"extra": true}}}}, http.StatusCreated)

	tb := newTab(t, srv.URL)
	tb.open("/queues/wide")
	tb.waitJS("the counters of every partition", `qt.ready('queue') && qt.num('stat-partitions') === 10001
		&& qt.num('stat-total') === 10002 && qt.num('stat-pending') === 10002
		&& qt.text('[data-testid="queue-meta"]').includes('10,001 partitions')`)
	tb.waitJS("one status read without partitions, a small answer", `(() => {
		const reads = performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/v1/status/queues/wide'));
		return reads.length > 0 && reads.every((e) => e.name.endsWith('/api/v1/status/queues/wide?partitionLimit=0')
			&& e.encodedBodySize < 20000);
	})()`)
	tb.click(`[data-testid="queue-tabs"] [data-testid="tab-partitions"]`)
	tb.waitJS("the partitions tab pages every partition", `qt.ready('queue') && qt.rows('table-partitions') === 50
		&& qt.text('[data-testid="partitions-pager"]').includes('of 10,001')`)
	tb.clean("the queue page of 10 001 partitions")
}
