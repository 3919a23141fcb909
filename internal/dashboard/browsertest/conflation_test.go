package browsertest

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
)

// TestConflatingGroupsAreMarked lets one group pop a queue with conflation (last-value
// delivery) and another without, and checks that the consumers grid, the group view and
// the queue page mark the first as "last value" and not the second.
func TestConflatingGroupsAreMarked(t *testing.T) {
	t.Parallel()
	browser(t) // skips without Chromium, before the broker starts
	srv := daemontest.Start(t, daemontest.Options{})
	c := newClient(srv.URL, "")
	items := []obj{}
	for i := range 3 {
		items = append(items, obj{"queue": "lv.prices", "partition": "eur", "payload": obj{"price": i}})
	}
	callJSON[[]obj](t, c, "POST", "/api/v1/push", obj{"items": items}, http.StatusCreated)
	latest := callJSON[obj](t, c, "GET", "/api/v1/pop/queue/lv.prices?consumerGroup=latest&conflation=true", nil, http.StatusOK)
	require.Equal(t, true, latest["conflation"], "the pop of latest is served conflated")
	callJSON[obj](t, c, "GET", "/api/v1/pop/queue/lv.prices?consumerGroup=every", nil, http.StatusOK)

	tb := newTab(t, srv.URL)
	tb.open("/consumers")
	tb.waitJS("both groups", `!!qt.row('table-consumers', 'latest|lv.prices') && !!qt.row('table-consumers', 'every|lv.prices')`)
	mark := `[data-testid="group-last-value"]`
	require.True(t, eval[bool](tb, `!!qt.row('table-consumers', 'latest|lv.prices').querySelector('`+mark+`')`),
		"the conflating group is marked")
	require.False(t, eval[bool](tb, `!!qt.row('table-consumers', 'every|lv.prices').querySelector('`+mark+`')`),
		"a group that gets every message is not")

	tb.click(`[data-testid="table-consumers"] tr[data-key="latest|lv.prices"] [data-testid="group-view"]`)
	tb.waitJS("the group view marks the queue", `qt.has('[data-testid="group-detail"] [data-testid="group-queue"] `+mark+`')`)
	tb.click(`[data-testid="group-detail"] [data-testid="modal-close"]`)
	tb.click(`[data-testid="table-consumers"] tr[data-key="every|lv.prices"] [data-testid="group-view"]`)
	tb.waitJS("the other group's view", `qt.rows('table-group-partitions') >= 1`)
	require.False(t, eval[bool](tb, `qt.has('[data-testid="group-detail"] `+mark+`')`), "nor in its view")

	tb.open("/queues/lv.prices")
	tb.waitJS("the queue's groups", `!!qt.row('table-queue-groups', 'latest') && !!qt.row('table-queue-groups', 'every')`)
	require.True(t, eval[bool](tb, `!!qt.row('table-queue-groups', 'latest').querySelector('`+mark+`')`),
		"the queue page marks the conflating group")
	require.False(t, eval[bool](tb, `!!qt.row('table-queue-groups', 'every').querySelector('`+mark+`')`),
		"and not the other")
}
