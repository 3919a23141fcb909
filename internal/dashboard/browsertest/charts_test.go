package browsertest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
)

// chartGaps runs in the page: it imports the app's own time and chart modules (the
// hashed files the app loaded), turns a series with missing minutes into rows with
// gaps, draws it with the app's Chart, and leaves what it drew in window.qtGaps.
const chartGaps = `(async () => {
  const url = (p) => performance.getEntriesByType('resource').map((e) => e.name).find((n) => n.endsWith(p));
  const time = await import(url('/lib/time.js'));
  const chart = await import(url('/lib/chart.js'));
  const view = await import(url('/lib/html.js'));
  const at = (m, v) => ({ timestamp: '2026-01-01T10:' + String(m).padStart(2, '0') + ':00Z', v });
  const answer = { bucketMinutes: 1, bucketSeconds: 60 };
  const rows = time.gaps(time.series([at(9, 5), at(0, 1), at(1, 2), at(5, 3), at(6, 4)], 'timestamp', answer), answer);
  const el = document.createElement('div');
  document.body.appendChild(el);
  view.render(view.html` + "`" + `<${chart.Chart} testid="gap-chart" series=${[{ label: 'v', points: chart.points(rows, 'v') }]} />` + "`" + `, el);
  window.qtGaps = { rows: rows.map((r) => (r.v === undefined ? 'gap' : String(r.v))).join(' '),
    path: el.querySelector('path.line').getAttribute('d'), dots: el.querySelectorAll('circle.dot').length };
  el.remove();
})()`

// TestChartsDrawGaps: buckets a series leaves out (worker-metrics leaves out those in
// which no broker ran) become gaps: the line breaks there instead of joining across,
// and a point alone between gaps is drawn as a dot.
func TestChartsDrawGaps(t *testing.T) {
	t.Parallel()
	browser(t)
	srv := daemontest.Start(t, daemontest.Options{})
	tb := newTab(t, srv.URL)
	tb.open("/")
	tb.waitJS("the dashboard", `qt.ready('dashboard')`)
	tb.do("draw a chart with gaps", js(chartGaps))
	tb.waitJS("the chart is drawn", `!!window.qtGaps`)

	require.Equal(t, "1 2 gap 3 4 gap 5", eval[string](tb, `window.qtGaps.rows`),
		"oldest first, one gap after 10:01 and after 10:06")
	path := eval[string](tb, `window.qtGaps.path`)
	require.Equal(t, 3, strings.Count(path, "M"), "three runs: 10:00–10:01, 10:05–10:06 and 10:09 alone (%s)", path)
	require.Equal(t, 2, strings.Count(path, "L"), "the two-point runs join their points only, across no gap (%s)", path)
	require.Equal(t, 1, eval[int](tb, `window.qtGaps.dots`), "10:09 alone is a dot")
	tb.clean("the chart")
}
