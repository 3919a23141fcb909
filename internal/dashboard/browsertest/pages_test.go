package browsertest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pageCheck is one page: how the app reaches it, its deep link, and what shows that
// the seeded data is there.
type pageCheck struct {
	name  string   // subtest and screenshot name
	via   []string // elements clicked, in order, from the previous page; nil: open path
	path  string   // the deep link (path and query) the app must be at
	id    string   // its page-<id>
	ready string   // JavaScript: the seeded data shows
	allow []allowance
	after func(t *testing.T, tb *tab) // checks that change the page, run last
	shot  bool                        // saved as name.png
}

// TestPages visits every page through the app (sidebar and links) and by a reload of
// its deep link: both show the seeded data, the same elements, and stay clean. Each
// page is saved as a screenshot. The subtests share one tab, in order, so they do not
// run in parallel.
func TestPages(t *testing.T) {
	t.Parallel()
	browser(t)
	srv, c, s := startSeeded(t)
	totals := callJSON[obj](t, c, "GET", "/api/v1/status/queues/e2e.orders", nil, http.StatusOK)
	want := queueTotals(t, totals)

	tb := newTab(t, srv.URL)
	tb.open("/")
	tb.waitJS("the dashboard", `qt.ready('dashboard')`)
	checkAppFiles(t, tb.mon.requests())
	tb.clean("the first load")

	checks := []pageCheck{
		{name: "dashboard", shot: true, via: []string{nav("operations"), nav("dashboard")}, path: "/", id: "dashboard",
			ready: `qt.num('stat-queues') >= 2 && qt.num('stat-messages') >= 30 && !!qt.row('table-top-queues', 'e2e.orders')
				&& !!qt.row('table-top-groups', 'billing@e2e.orders')`,
			after: func(t *testing.T, tb *tab) {
				tb.click(`[data-testid="metric-throughput"] .metric-line`)
				tb.waitJS("the throughput chart opens", `qt.has('[data-testid="chart-throughput"] svg')`)
				tb.hover(`[data-testid="chart-throughput"] svg`)
				tb.waitJS("the chart reads out a bucket", `qt.text('[data-testid="chart-readout"]').includes('push/s')`)
				tb.click(`[data-testid="range-24h"]`)
				tb.waitJS("the 24h range loads", `qt.ready('dashboard') && qt.has('[data-testid="range-24h"].on') && qt.num('stat-messages') >= 30`)
				tb.click(`[data-testid="metric-errors"] [data-testid="metric-now"] a`)
				tb.waitJS("the errors row opens the dead letters", `qt.ready('dlq') && location.pathname === '/dlq'`)
				tb.clean("the dashboard's controls")
			}},
		{name: "operations", shot: true, via: []string{nav("operations")}, path: "/operations", id: "operations",
			ready: `qt.has('[data-testid="queue-chip"][data-name="e2e.orders"]') && qt.rows('table-workers') >= 1
				&& qt.text('[data-testid="chart-per-queue"]').includes('e2e.orders')
				&& qt.has('[data-testid="card-ops-throughput"] path.line[d*="L"]')`,
			after: func(t *testing.T, tb *tab) {
				tb.click(`[data-testid="per-queue-tabs"] [data-testid="tab-parked"]`)
				tb.click(`[data-testid="per-replica"]`)
				tb.waitJS("parked pops per replica", `qt.ready('operations') && qt.has('[data-testid="chart-per-queue"]')
					&& performance.getEntriesByType('resource').some((e) => e.name.includes('/api/v1/analytics/queue-parked-replicas?'))`)
				tb.click(`[data-testid="range-15m"]`)
				tb.waitJS("the 15 minute range", `qt.ready('operations') && qt.has('[data-testid="range-15m"].on') && qt.rows('table-workers') >= 1`)
				tb.click(`[data-testid="range-custom"]`)
				tb.waitJS("the custom range", `qt.ready('operations') && qt.has('[data-testid="range-from"]') && qt.rows('table-workers') >= 1`)
				tb.clean("the operations controls")
			}},
		{name: "queues", shot: true, via: []string{nav("queues")}, path: "/queues", id: "queues",
			ready: `!!qt.row('table-queues', 'e2e.orders') && !!qt.row('table-queues', 'e2e.tmp')`,
			after: func(t *testing.T, tb *tab) {
				tb.typeInto(`[data-testid="queues-search"]`, "zzz")
				tb.waitJS("the search for zzz finds nothing", `qt.has('[data-testid="card-queues"] [data-testid="empty-state"]')`)
				tb.clean("the queue search")
			}},
		{name: "queue", shot: true, via: []string{nav("queues"), `[data-testid="table-queues"] tr[data-key="e2e.orders"] a[data-testid="queue-link"]`},
			path: "/queues/e2e.orders", id: "queue",
			ready: fmt.Sprintf(`qt.num('stat-total') === %d && qt.num('stat-pending') === %d && qt.num('stat-processing') === %d
				&& qt.num('stat-completed') === %d && qt.num('stat-failed') === %d && qt.num('stat-dlq') === %d
				&& qt.num('stat-partitions') === %d`,
				want["total"], want["pending"], want["processing"], want["completed"], want["failed"], want["deadLetter"], want["partitions"]),
			after: func(t *testing.T, tb *tab) {
				for _, tc := range []struct{ tab, ready string }{
					{"partitions", fmt.Sprintf(`qt.rows('table-partitions') === %d && !!qt.text('[data-testid="table-partitions"]').match(/\bp0\b/)`, want["partitions"])},
					{"messages", `qt.rows('table-latest-messages') === 30`},
					{"long-polls", `qt.has('[data-testid="card-longpolls"] [data-testid="table-longpolls"]')`},
					{"settings", `document.querySelector('[data-testid="opt-leaseTime"]').value === '120'
						&& document.querySelector('[data-testid="opt-retryLimit"]').value === '2'`},
				} {
					tb.click(`[data-testid="queue-tabs"] [data-testid="tab-` + tc.tab + `"]`)
					tb.waitJS("the "+tc.tab+" tab", `qt.ready('queue') && location.search === '?tab=' + encodeURIComponent(`+
						`document.querySelector('[data-testid="tab-`+tc.tab+`"]').textContent) && (`+tc.ready+`)`)
					tb.clean("the " + tc.tab + " tab")
				}
				tb.screenshot("queue-settings")
				tb.click(`[data-testid="queue-tabs"] [data-testid="tab-overview"]`)
				tb.waitJS("the overview tab", `qt.ready('queue') && location.search === '' && qt.has('[data-testid="queue-config"]')`)
			}},
		{name: "messages", shot: true, via: []string{`[data-testid="queue-browse"]`}, path: "/messages?queue=e2e.orders", id: "messages",
			ready: `qt.rows('table-messages') === 30 && [...document.querySelectorAll('[data-testid="message-row-status"]')]
				.some((e) => e.textContent === 'dead_letter')`,
			after: func(t *testing.T, tb *tab) {
				tb.click(`[data-testid="table-messages"] tr[data-key="` + s.tx["e2e-3"] + `/e2e-3"] [data-testid="message-tx"]`)
				tb.waitJS("the message drawer shows the payload", `qt.text('[data-testid="message-drawer"] [data-testid="payload"]').includes('"tag"')`)
				require.Contains(t, tb.text(`[data-testid="message-drawer"]`), "e2e-3")
				// Over plain HTTP on a network address the browser has no Clipboard API
				// (a secure context only): Copy selects the payload instead of throwing.
				require.True(t, eval[bool](tb, `Object.defineProperty(navigator, 'clipboard', {value: undefined, configurable: true}) && true`))
				tb.click(`[data-testid="message-drawer"] [data-testid="copy"]`)
				tb.waitToast("ok", "press Ctrl+C")
				require.Contains(t, eval[string](tb, `window.getSelection().toString()`), `"tag"`)
				tb.click(`[data-testid="message-drawer"] [data-testid="modal-close"]`)
				tb.waitJS("the drawer closes", `!qt.has('[data-testid="message-drawer"]')`)
				tb.clean("the message drawer")
				tb.open("/messages?queue=e2e.orders&limit=10")
				tb.waitJS("a page of ten", `qt.ready('messages') && qt.rows('table-messages') === 10
					&& document.querySelector('[data-testid="page-prev"]').disabled && qt.text('[data-testid="messages-pager"]').includes('of 30')`)
				tb.click(`[data-testid="page-next"]`)
				tb.waitJS("the next ten", `qt.ready('messages') && location.search.includes('offset=10') && qt.rows('table-messages') === 10
					&& qt.text('[data-testid="messages-pager"]').includes('11–20 of 30')`)
				tb.clean("the message pages")
			}},
		{name: "consumers", shot: true, via: []string{nav("consumers")}, path: "/consumers", id: "consumers",
			ready: `!!qt.row('table-consumers', 'billing|e2e.orders')`,
			after: func(t *testing.T, tb *tab) {
				tb.click(`[data-testid="consumers-lagging-only"]`)
				tb.waitJS("lagging only keeps billing (its lag is minutes)", `location.search === '?lagging=1' && !!qt.row('table-consumers', 'billing|e2e.orders')`)
				tb.click(`[data-testid="table-consumers"] tr[data-key="billing|e2e.orders"] [data-testid="group-view"]`)
				tb.waitJS("the group's partitions and lag history, drawn as lines", `qt.rows('table-group-partitions') >= 1
					&& qt.has('[data-testid="chart-lag-history"] path.line[d*="L"]')
					&& qt.has('[data-testid="chart-timelag-history"] path.line[d*="L"]')
					&& !qt.has('[data-testid="group-detail"] [data-testid="inline-error"]')`)
				tb.waitJS("the group's lag on the queue, as its row says", `qt.text('[data-testid="group-lag-summary"]').startsWith(
					qt.text('[data-testid="table-consumers"] tr[data-key="billing|e2e.orders"] [data-testid="total-lag"]') + ' unconsumed on e2e.orders')`)
				tb.screenshot("consumer-group")
				tb.click(`[data-testid="group-detail"] [data-testid="modal-close"]`)
				tb.clean("the group view")
			}},
		{name: "dlq", shot: true, via: []string{nav("dlq")}, path: "/dlq", id: "dlq",
			ready: `qt.rows('table-dlq') === 5 && qt.text('[data-testid="card-top-errors"]').includes('boom-e2e')`,
			after: func(t *testing.T, tb *tab) {
				tb.click(`[data-testid="table-dlq"] tr[data-testid="row"] [data-testid="dlq-error"]`)
				tb.waitJS("the dead letter's payload", `qt.text('[data-testid="dlq-detail"] [data-testid="payload"]').includes('"tag"')
					&& qt.text('[data-testid="dlq-detail"]').includes('boom-e2e')`)
				tb.click(`[data-testid="dlq-detail"] [data-testid="modal-close"]`)
				tb.typeInto(`[data-testid="dlq-queue"]`, "e2e.tmp\n")
				tb.waitJS("the queue filter is applied by the broker", `location.search === '?queue=e2e.tmp' && qt.ready('dlq')
					&& qt.has('[data-testid="table-dlq"] [data-testid="empty-state"]')`)
				tb.clean("the dead-letter controls")
			}},
		{name: "traces", shot: true, via: []string{nav("traces"), `[data-testid="trace-name"][href$="e2e-trace"]`}, path: "/traces?name=e2e-trace", id: "traces",
			ready: `qt.text('[data-testid="table-traces"]').includes('hello-e2e')`,
			after: func(t *testing.T, tb *tab) {
				tb.click(`[data-testid="table-traces"] [data-testid="trace-data"]`)
				tb.waitJS("the event's data and the message payload", `qt.text('[data-testid="trace-detail"] [data-testid="payload"]').includes('hello-e2e')
					&& qt.text('[data-testid="trace-payload"]').includes('"tag"')`)
				tb.click(`[data-testid="trace-detail"] [data-testid="modal-close"]`)
				// A name picked from the list of recent names fills the search box.
				tb.open("/traces")
				tb.click(`[data-testid="trace-name"][href$="e2e-trace"]`)
				tb.waitJS("the name picked is in the search box", `location.search === '?name=e2e-trace'
					&& document.querySelector('[data-testid="traces-search"]').value === 'e2e-trace'`)
				tb.clean("the trace event")
			}},
		{name: "analytics", shot: true, via: []string{nav("analytics")}, path: "/analytics", id: "analytics",
			ready: `qt.num('stat-total') >= 30`,
			after: func(t *testing.T, tb *tab) {
				// Every status has a colour of its own, in the doughnut and in the bars.
				swatches := eval[[]string](tb, `[...document.querySelectorAll('[data-testid="card-status"] .legend .sw')]
					.map((e) => getComputedStyle(e).backgroundColor)`)
				require.Len(t, swatches, 4)
				distinct := map[string]bool{}
				for _, c := range swatches {
					distinct[c] = true
				}
				require.Len(t, distinct, 4, "the status doughnut's colours: %v", swatches)
				part := func(label string) string {
					return `getComputedStyle([...document.querySelectorAll('[data-testid="card-top8"] .hbar-f')]
						.find((e) => e.title.startsWith('` + label + `:'))).backgroundColor`
				}
				require.NotEqual(t, eval[string](tb, part("processing")), eval[string](tb, part("completed")),
					"processing and completed in the top queues' bars")
				// The centre is the sum of the slices, labelled so, not the Total card.
				require.Equal(t, "sum of states", eval[string](tb, `document.querySelector('[data-testid="card-status"] [data-testid="doughnut-caption"]').textContent`))
				require.Equal(t, eval[string](tb, `String([...document.querySelectorAll('[data-testid="card-status"] .legend b')]
					.reduce((a, e) => a + Number(e.textContent), 0))`),
					eval[string](tb, `document.querySelector('[data-testid="card-status"] [data-testid="doughnut-sum"]').textContent`))
				tb.choose(`[data-testid="analytics-queue"]`, "e2e.orders")
				tb.waitJS("one queue's counters", `qt.ready('analytics') && qt.num('stat-total') === 30 && qt.num('stat-dlq') === 5`)
				tb.click(`[data-testid="range-7d"]`)
				tb.waitJS("the 7 day range", `qt.ready('analytics') && qt.has('[data-testid="range-7d"].on') && qt.num('stat-total') === 30`)
				tb.clean("the analytics filters")
			}},
		{name: "system", shot: true, via: []string{nav("system")}, path: "/system", id: "system",
			ready: `(qt.rows('table-replicas') >= 1 || (qt.has('[data-testid="card-replicas"] [data-testid="empty-state"]') && qt.rows('table-servers') >= 1))
				&& [...document.querySelectorAll('[data-testid="table-pg-sizes"] tr[data-testid="row"] td:first-child')]
				.some((e) => /(^|\.)messages$/.test(e.textContent.trim()))`,
			after: func(t *testing.T, tb *tab) {
				tb.click(`[data-testid="resources-mode"] [data-testid="tab-aggregate"]`)
				tb.click(`[data-testid="resources-stat"] [data-testid="tab-max"]`)
				tb.waitJS("the aggregate of the maxima", `qt.text('[data-testid="chart-sys-rss"]').includes('all 1 servers')`)
				tb.clean("the resource controls")
				// queen answers the background writer's counters, not upstream's buffer
				// contents, and the card says which it shows.
				require.True(t, eval[bool](tb, `qt.has('[data-testid="pg-bgwriter"]')
					&& qt.text('[data-testid="card-pg-buffers"]').includes('Buffer activity')`), "the buffer card's title")
			}},
		{name: "queue-not-found", path: "/queues/nope", id: "queue",
			ready: `qt.has('[data-testid="queue-not-found"]')`,
			allow: []allowance{allow(404, "GET", "/api/v1/status/queues/nope"), allow(404, "GET", "/api/v1/resources/queues/nope")}},
		{name: "not-found", path: "/no/such/page", id: "not-found", ready: `qt.has('[data-testid="not-found"]')`},
	}
	for _, pc := range checks {
		t.Run(pc.name, func(t *testing.T) {
			tb := tb.with(t)
			if pc.via == nil {
				tb.open(pc.path)
			}
			for _, sel := range pc.via {
				tb.click(sel)
			}
			ready := `qt.ready('` + pc.id + `') && (` + pc.ready + `)`
			tb.waitJS(pc.name+" shows the seeded data", ready)
			tb.waitIdle()
			require.Equal(t, pc.path, eval[string](tb, `location.pathname + location.search`))
			first := eval[string](tb, `qt.sig()`)
			tb.clean(pc.name+" reached in the app", pc.allow...)

			tb.reload()
			tb.waitJS(pc.name+" shows the seeded data after a reload", ready)
			tb.waitIdle()
			require.Equal(t, first, eval[string](tb, `qt.sig()`), "the deep link %s shows what the app showed", pc.path)
			tb.clean(pc.name+" after a reload", pc.allow...)
			if pc.shot {
				tb.screenshot(pc.name)
			}
			if pc.after != nil {
				pc.after(t, tb)
			}
		})
	}

	t.Run("Search", func(t *testing.T) {
		tb := tb.with(t)
		tb.open("/")
		tb.waitJS("the dashboard", `qt.ready('dashboard')`)
		tb.click(`[data-testid="search-open"]`)
		tb.typeInto(`[data-testid="search-input"]`, "e2e")
		tb.waitJS("the search lists both queues and the group", `qt.has('[data-testid="search-result"][data-name="e2e.orders"]')
			&& qt.has('[data-testid="search-result"][data-name="e2e.tmp"]') && !qt.has('[data-testid="search-result"][data-name="billing"]')`)
		tb.screenshot("shell")
		tb.typeInto(`[data-testid="search-input"]`, "bill")
		tb.waitJS("the search finds the group", `qt.has('[data-testid="search-result"][data-kind="group"][data-name="billing"]')`)
		tb.click(`[data-testid="search-result"][data-name="billing"]`)
		tb.waitJS("the group opens in Consumers", `qt.ready('consumers') && location.search === '?search=billing'
			&& !!qt.row('table-consumers', 'billing|e2e.orders')`)
		tb.clean("the search")
	})
}

// nav is the selector of a sidebar entry.
func nav(id string) string { return `[data-testid="nav-` + id + `"]` }

// with is tb reporting to t (a subtest), sharing the tab.
func (tb *tab) with(t *testing.T) *tab {
	c := *tb
	c.t = t
	return &c
}

// queueTotals reads totals.messages of GET /api/v1/status/queues/{queue} as integers.
func queueTotals(t *testing.T, v obj) map[string]int {
	t.Helper()
	totals, _ := v["totals"].(obj)
	m, ok := totals["messages"].(obj)
	if !ok {
		m = totals
	}
	out := map[string]int{}
	for _, k := range []string{"total", "pending", "processing", "completed", "failed", "deadLetter"} {
		f, ok := m[k].(float64)
		require.True(t, ok, "totals.messages.%s in %v", k, v["totals"])
		out[k] = int(f)
	}
	parts, _ := v["partitions"].([]any)
	out["partitions"] = len(parts)
	return out
}

// checkAppFiles checks what the browser loaded for the app: index.html without a
// cache (and with the policy), every file under /assets/ 200, cached for good, gzipped
// when text, with its exact type.
func checkAppFiles(t *testing.T, reqs []request) {
	t.Helper()
	types := map[string]string{".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8",
		".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
	assets := 0
	for _, r := range reqs {
		switch {
		case r.path == "/" && r.method == "GET":
			require.Equal(t, int64(200), r.status, "GET /")
			require.Equal(t, "no-cache", r.headers["cache-control"])
			require.Contains(t, r.headers["content-security-policy"], "default-src 'self'")
		case strings.HasPrefix(r.path, "/assets/"):
			assets++
			require.Equal(t, int64(200), r.status, r.path)
			require.Equal(t, "public, max-age=31536000, immutable", r.headers["cache-control"], r.path)
			ext := r.path[strings.LastIndex(r.path, "."):]
			require.Equal(t, types[ext], r.headers["content-type"], r.path)
			if ext != ".svg" {
				require.Equal(t, "gzip", r.headers["content-encoding"], r.path)
			}
		}
	}
	require.Greater(t, assets, 20, "the app loads its modules from /assets/")
}
