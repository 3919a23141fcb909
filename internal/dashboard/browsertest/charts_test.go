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
	tb := runInApp(t, "draw a chart with gaps", chartGaps, "qtGaps")

	require.Equal(t, "1 2 gap 3 4 gap 5", eval[string](tb, `window.qtGaps.rows`),
		"oldest first, one gap after 10:01 and after 10:06")
	path := eval[string](tb, `window.qtGaps.path`)
	require.Equal(t, 3, strings.Count(path, "M"), "three runs: 10:00–10:01, 10:05–10:06 and 10:09 alone (%s)", path)
	require.Equal(t, 2, strings.Count(path, "L"), "the two-point runs join their points only, across no gap (%s)", path)
	require.Equal(t, 1, eval[int](tb, `window.qtGaps.dots`), "10:09 alone is a dot")
	tb.clean("the chart")
}

// perQueueGaps runs in the page: it imports the operations page's module and turns
// queue-ops rows of one queue, with minutes in which nothing happened on it (queue-ops
// has no row for them), into that queue's chart points; window.qtPerQueue is the
// points as text ("gap" for a gap).
const perQueueGaps = `(async () => {
  const url = (p) => performance.getEntriesByType('resource').map((e) => e.name).find((n) => n.endsWith(p));
  const ops = await import(url('/pages/operations.js'));
  const at = (q, m, v) => ({ queueName: q, t: Date.UTC(2026, 0, 1, 10, m), pushPerSecond: v });
  const rows = [at('a', 0, 1), at('b', 0, 9), at('a', 1, 2), at('a', 5, 3), at('b', 1, 8)];
  const [a] = ops.perQueue(rows, 'pushPerSecond', ['a'], { bucketSeconds: 60 });
  window.qtPerQueue = a.points.map((p) => (p.v === undefined ? 'gap' : String(p.v))).join(' ');
})()`

// TestChartsPerQueueGaps: a queue's line on the operations page breaks over the minutes
// in which nothing happened on that queue instead of joining across them.
func TestChartsPerQueueGaps(t *testing.T) {
	t.Parallel()
	tb := runInApp(t, "per-queue points", perQueueGaps, "qtPerQueue")
	require.Equal(t, "1 2 gap 3", eval[string](tb, `window.qtPerQueue`),
		"queue a: 10:00, 10:01, nothing until 10:05")
	tb.clean("the per-queue points")
}

// chartBars runs in the page: it draws bar series with the app's Chart into a box 600
// pixels wide, one of five buckets and one of a single bucket, and leaves in
// window.qtBars the plot area (the grid lines' ends) and each chart's bars.
const chartBars = `(async () => {
  const url = (p) => performance.getEntriesByType('resource').map((e) => e.name).find((n) => n.endsWith(p));
  const chart = await import(url('/lib/chart.js'));
  const view = await import(url('/lib/html.js'));
  const at = (m, v) => ({ t: Date.UTC(2026, 0, 1, 10, m), v });
  const out = [];
  for (const pts of [[at(0, 5), at(1, 2), at(2, 7), at(3, 1), at(4, 3)], [at(0, 4)]]) {
    const el = document.createElement('div');
    el.style.width = '600px';
    document.body.appendChild(el);
    view.render(view.html` + "`" + `<${chart.Chart} testid="bar-chart" series=${[{ label: 'n', kind: 'bar', points: pts }]} />` + "`" + `, el);
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    const grid = el.querySelector('line.grid');
    out.push({ left: Number(grid.getAttribute('x1')), right: Number(grid.getAttribute('x2')),
      bars: [...el.querySelectorAll('rect.bar')].map((r) => [Number(r.getAttribute('x')), Number(r.getAttribute('width'))]) });
    el.remove();
  }
  window.qtBars = out;
})()`

// TestChartsKeepBarsInThePlot: the bars of the first and the last bucket stay inside
// the plot area, clear of the y-axis labels on its left, and bars do not overlap.
func TestChartsKeepBarsInThePlot(t *testing.T) {
	t.Parallel()
	tb := runInApp(t, "draw bar charts", chartBars, "qtBars")

	type plot struct {
		Left, Right float64
		Bars        [][2]float64
	}
	plots := eval[[]plot](tb, `window.qtBars`)
	require.Len(t, plots, 2)
	for i, p := range plots {
		require.NotEmpty(t, p.Bars, "chart %d draws bars", i)
		end := p.Left
		for _, b := range p.Bars {
			require.GreaterOrEqual(t, b[0], p.Left, "chart %d: a bar starts left of the plot, over the axis labels: %v", i, p)
			require.LessOrEqual(t, b[0]+b[1], p.Right, "chart %d: a bar ends right of the plot: %v", i, p)
			require.GreaterOrEqual(t, b[0], end, "chart %d: bars overlap: %v", i, p)
			end = b[0] + b[1]
		}
	}
	tb.clean("the bar charts")
}

// runInApp starts a broker, opens the dashboard in a new tab, runs script (which
// leaves its answer in window.<global>) and waits for that answer.
func runInApp(t *testing.T, what, script, global string) *tab {
	t.Helper()
	browser(t)
	srv := daemontest.Start(t, daemontest.Options{})
	tb := newTab(t, srv.URL)
	tb.open("/")
	tb.waitJS("the dashboard", `qt.ready('dashboard')`)
	tb.do(what, js(script))
	tb.waitJS(what+": done", `!!window.`+global)
	return tb
}
