package browsertest

import (
	"net/http"
	"testing"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
)

// TestConsumersPageDuringAnOutage: the Consumers page loaded while PostgreSQL is down
// shows the error, not an empty grid ("No rows.", "0 of 0") that reads as no groups.
func TestConsumersPageDuringAnOutage(t *testing.T) {
	t.Parallel()
	browser(t)
	cluster := pgtest.StartCluster(t)
	srv := daemontest.Start(t, daemontest.Options{DBURL: cluster.URL()})
	c := newClient(srv.URL, "")
	callJSON[[]obj](t, c, "POST", "/api/v1/push", obj{"items": []obj{{"queue": "down", "payload": 1}}}, http.StatusCreated)
	cluster.Stop()
	defer cluster.Start()

	tb := newTab(t, srv.URL)
	tb.open("/consumers")
	tb.waitJS("the error, and no empty grid under it", `qt.has('[data-testid="inline-error"]')
		&& !qt.has('[data-testid="card-consumers"] [data-testid="empty-state"]')
		&& !qt.has('[data-testid="table-consumers"]')
		&& !document.body.innerText.includes('0 of 0')`)
}
