package browsertest

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
)

// TestQueueDLQBannerCountsEveryGroup: the queue page's dead-letter banner counts the
// entries its Open link lists, those of every consumer group, not queue mode's alone.
func TestQueueDLQBannerCountsEveryGroup(t *testing.T) {
	t.Parallel()
	browser(t)
	srv := daemontest.Start(t, daemontest.Options{})
	c := newClient(srv.URL, "")
	var items []obj
	for i := range 3 {
		items = append(items, obj{"queue": "dq", "payload": obj{"i": i}})
	}
	callJSON[[]obj](t, c, "POST", "/api/v1/push", obj{"items": items}, http.StatusCreated)
	for _, pop := range []string{"batch=1", "batch=2&consumerGroup=audit"} {
		got := callJSON[obj](t, c, "GET", "/api/v1/pop/queue/dq?"+pop, nil, http.StatusOK)
		var acks []obj
		for _, x := range got["messages"].([]any) {
			m := x.(obj)
			acks = append(acks, obj{"transactionId": m["transactionId"], "partitionId": m["partitionId"],
				"leaseId": m["leaseId"], "status": "dlq", "error": "boom"})
		}
		body := obj{"acknowledgments": acks}
		if pop != "batch=1" {
			body["consumerGroup"] = "audit"
		}
		callJSON[[]obj](t, c, "POST", "/api/v1/ack/batch", body, http.StatusOK)
	}
	require.Equal(t, 3.0, callJSON[obj](t, c, "GET", "/api/v1/dlq?queue=dq", nil, http.StatusOK)["total"])

	tb := newTab(t, srv.URL)
	tb.open("/queues/dq")
	tb.waitJS("the banner counts every group's entries", `qt.ready('queue') && qt.num('stat-dlq') === 1
		&& qt.text('[data-testid="banner-queue-dlq"]').startsWith('3 entries in the dead-letter queue')`)
	tb.click(`[data-testid="banner-queue-dlq"] a`)
	tb.waitJS("its link lists as many", `qt.ready('dlq') && qt.rows('table-dlq') === 3`)
	// Filters that match nothing say so, rather than that the queue is empty.
	tb.open("/dlq?queue=dq&consumerGroup=nobody")
	tb.waitJS("an empty filter says no entry matches", `qt.ready('dlq') && qt.rows('table-dlq') === 0
		&& qt.text('[data-testid="table-dlq"] [data-testid="empty-state"]') === 'No dead letter matches the filters.'`)
	tb.clean("the dead-letter banner")
}
