package monitoring_test

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
)

// TestPreviewSubstitutesEveryQuery runs without Prometheus or a browser (and so in
// make test): every query of the shipped dashboard gets a value for each of its
// Grafana variables from the preview's substitution and is then plain PromQL, so the
// preview's picture can be made of every panel; the intervals are Grafana's for a
// short and a long range.
func TestPreviewSubstitutesEveryQuery(t *testing.T) {
	t.Parallel()
	var raw previewDashboard
	readJSON(t, dashboardFile, &raw)
	end := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	queries := 0
	for _, p := range flattenPreview(raw.Panels) {
		vars := grafanaVars(raw, p, end.Add(-150*time.Second), end)
		for _, tg := range p.Targets {
			expr, err := substitute(tg.Expr, vars)
			require.NoError(t, err, "panel %q query %s", p.Title, tg.RefID)
			require.NotContains(t, expr, "$", "panel %q query %s", p.Title, tg.RefID)
			_, err = parser.NewParser(parser.Options{}).ParseExpr(expr)
			require.NoError(t, err, "panel %q query %s: %s", p.Title, tg.RefID, expr)
			queries++
		}
	}
	require.Greater(t, queries, 20)

	half := previewSource{}
	half.GridPos.W = 12
	short := grafanaVars(raw, half, end.Add(-150*time.Second), end)
	require.Equal(t, "1s", short["__interval"], "the scrape interval is the floor")
	require.Equal(t, "4s", short["__rate_interval"], "four scrape intervals")
	require.Equal(t, ".*", short["instance"], "the instance variable opens on All")
	long := grafanaVars(raw, half, end.Add(-6*time.Hour), end)
	require.Equal(t, "30s", long["__interval"], "6 h over a half-width panel, rounded as Grafana does")
	require.Equal(t, "31s", long["__rate_interval"])

	_, err := substitute(`rate(x{job=~"$job"}[5m])`, short)
	require.ErrorContains(t, err, "$job", "a variable the dashboard does not define")
}

// TestPreviewFormatsLikeGrafana pins how the preview writes values and legends: units
// scaled as Grafana's, legendFormat labels filled in, and a series without a
// legendFormat named by its selector.
func TestPreviewFormatsLikeGrafana(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		unit string
		v    float64
		want string
	}{
		{"short", 3, "3"},
		{"short", 1520, "1.52 K"},
		{"ops", 12.26, "12.3 ops/s"},
		{"reqps", 0.5, "0.50 req/s"},
		{"s", 0.0123, "12.3 ms"},
		{"s", 95, "1.58 min"},
		{"bytes", 40 << 20, "40 MiB"},
		{"percentunit", 0.0015, "0.15%"},
		{"percentunit", 0, "0%"},
	} {
		require.Equal(t, c.want, formatValue(c.unit, c.v), "%v %s", c.v, c.unit)
	}
	labels := map[string]string{"__name__": "queen_consumer_group_lag_seconds", "queue": "orders", "group": "billing"}
	require.Equal(t, "orders / billing", legendName("{{queue}} / {{ group }}", "x", labels))
	require.Equal(t, `queen_consumer_group_lag_seconds{group="billing", queue="orders"}`, legendName("", "x", labels))
	require.Equal(t, "count(up)", legendName("__auto", "count(up)", map[string]string{}))

	s := previewSeries{T: []float64{0, 1, 2, 5, 6, 7}, V: []float64{1, 1, 1, 1, math.NaN(), 1}}
	require.Equal(t, [][]int{{0, 1, 2}, {3}, {5}}, runs(s, 1.5), "a gap and a NaN break the line")
}
