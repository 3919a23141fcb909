package browsertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

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

// TestLongNamesFitTheWindow: a queue, partition and consumer group with names of 255
// characters (the longest allowed) leave every page that lists them without a
// horizontal scroll at 1280 px, of the page or of a table (which would hide the other
// columns): names are cut with an ellipsis, whole in their tooltip.
func TestLongNamesFitTheWindow(t *testing.T) {
	t.Parallel()
	browser(t)
	srv := daemontest.Start(t, daemontest.Options{Env: []string{"QUEEN_ANALYTICS_BUCKET=" + analyticsBucket.String()}})
	c := newClient(srv.URL, "")
	long := func(prefix string) string { return prefix + strings.Repeat("x", 255-len(prefix)) }
	queueName, partition, group := long("ns.long"), long("part"), long("grp")
	var items []obj
	for i := range 4 {
		items = append(items, obj{"queue": queueName, "partition": partition, "transactionId": long(fmt.Sprintf("tx%d-", i)),
			"payload": obj{"i": i}})
	}
	callJSON[[]obj](t, c, "POST", "/api/v1/push", obj{"items": items}, http.StatusCreated)
	path := "/api/v1/pop/queue/" + url.PathEscape(queueName) + "/partition/" + url.PathEscape(partition)
	callJSON[obj](t, c, "GET", path+"?consumerGroup="+url.QueryEscape(group)+"&batch=1", nil, http.StatusOK)
	popped := callJSON[obj](t, c, "GET", path+"?batch=1", nil, http.StatusOK)
	m := popped["messages"].([]any)[0].(obj)
	callJSON[[]obj](t, c, "POST", "/api/v1/ack", obj{"transactionId": m["transactionId"], "partitionId": m["partitionId"],
		"leaseId": m["leaseId"], "status": "dlq", "error": long("boom")}, http.StatusOK)
	// The Operations page's chips come from closed analytics buckets.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(string(callJSON[json.RawMessage](t, c, "GET", "/api/v1/analytics/queue-ops", nil, http.StatusOK)), queueName) {
		require.False(t, time.Now().After(deadline), "the queue's activity reaches queue-ops within 30 s")
		<-time.After(200 * time.Millisecond)
	}

	tb := newTab(t, srv.URL)
	tb.do("a 1280 px window", chromedp.EmulateViewport(1280, 900))
	q := url.QueryEscape(queueName)
	for _, p := range []struct{ path, id, ready string }{
		{"/", "dashboard", `!!qt.row('table-top-queues', ` + jsString(queueName) + `)`},
		{"/operations", "operations", `qt.has('[data-testid="queue-chip"]')`},
		{"/queues", "queues", `!!qt.row('table-queues', ` + jsString(queueName) + `)`},
		{"/queues/" + url.PathEscape(queueName), "queue", `qt.num('stat-total') === 4 && qt.rows('table-queue-groups') === 2`},
		{"/queues/" + url.PathEscape(queueName) + "?tab=Messages", "queue", `qt.rows('table-latest-messages') === 4`},
		{"/queues/" + url.PathEscape(queueName) + "?tab=Partitions", "queue", `qt.rows('table-partitions') === 1`},
		{"/messages?queue=" + q, "messages", `qt.rows('table-messages') === 4`},
		{"/consumers", "consumers", `qt.rows('table-consumers') >= 1`},
		{"/analytics", "analytics", `qt.num('stat-total') === 4`},
		{"/dlq", "dlq", `qt.rows('table-dlq') === 1`},
	} {
		tb.open(p.path)
		tb.waitJS(p.path+" with the long names", `qt.ready('`+p.id+`') && (`+p.ready+`)`)
		tb.waitJS(p.path+" without a horizontal scroll, of the page or of a table", `document.documentElement.scrollWidth
			<= document.documentElement.clientWidth && [...document.querySelectorAll('.table-wrap')].every((e) => e.scrollWidth <= e.clientWidth)`)
		tb.clean(p.path)
	}
	tb.open("/queues")
	tb.waitJS("the queue link keeps the whole name in its tooltip", `qt.ready('queues') &&
		document.querySelector('[data-testid="queue-link"]').title === `+jsString(queueName))
}
