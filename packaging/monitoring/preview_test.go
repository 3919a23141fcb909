package monitoring_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/testlog"
	"github.com/queenmq/queen/internal/testwait"
)

var (
	screenshotFlag = flag.String("monitoring.screenshot", "",
		"render a preview of the Grafana dashboard from a broker under load and save it as grafana-dashboard.png in this directory")
	trafficFlag = flag.Duration("monitoring.traffic", 150*time.Second,
		"how long the dashboard preview drives the broker before it queries Prometheus")
)

const (
	// scrapeInterval is Prometheus' scrape interval in the preview, and the minimum
	// interval a Grafana data source for it would be given (its "timeInterval").
	scrapeInterval = time.Second
	// previewWidth is the browser's viewport width, and so the picture's.
	previewWidth = 1600
	// screenshotName is the picture's file name in the -monitoring.screenshot directory.
	screenshotName = "grafana-dashboard.png"
)

// mayBeEmpty lists the panels whose queries may fairly answer no series under the
// preview's load, with why. Their queries must still succeed; every other panel's
// every query must answer at least one series.
var mayBeEmpty = map[string]string{
	"5xx share": "the load causes no 5xx, so the numerator selects no series (Grafana shows No data too)",
}

// TestDashboardPreview renders the shipped dashboard's panels from real data and saves
// a picture of it, when -monitoring.screenshot=DIR is given (make monitoring-screenshot).
// It starts a broker, a Prometheus server scraping it every second and a load of
// pushes, consumer-group pops with lag, failed acks that dead-letter and a few 4xx;
// then runs every panel's queries through Prometheus' HTTP API with Grafana's
// variables substituted (see grafanaVars), draws the page laid out by the panels'
// gridPos and screenshots it in Chromium. It fails when a query fails, or when a panel
// outside mayBeEmpty answers no series for one of its queries, naming the panel and
// the query.
func TestDashboardPreview(t *testing.T) {
	if *screenshotFlag == "" {
		t.Skip("renders a picture of the Grafana dashboard only with -monitoring.screenshot=DIR (make monitoring-screenshot)")
	}
	if testing.Short() {
		t.Skip("the dashboard preview needs PostgreSQL, Prometheus and Chromium: not run under -short")
	}
	promBin, err := exec.LookPath("prometheus")
	require.NoError(t, err, "the preview needs the prometheus server: scripts/ensure-promtool.sh installs Debian's prometheus package")
	chromium := chromiumBinary()
	require.NotEmpty(t, chromium, "the preview needs Chromium (chromium, chromium-browser or google-chrome on PATH): scripts/ensure-chromium.sh installs it")
	var raw previewDashboard
	readJSON(t, dashboardFile, &raw)

	srv := daemontest.Start(t, daemontest.Options{Logs: &testlog.Buffer{}})
	prom := startPrometheus(t, promBin, srv.Addr)
	begin := time.Now()
	l := newLoad(t, srv.URL)
	l.run(t.Context(), *trafficFlag)
	require.False(t, t.Failed(), "the load failed")
	t.Logf("load of %s done: %v", *trafficFlag, l.counts)
	for _, what := range []string{"pushed orders", "popped orders", "ack failed", "404", "400"} {
		require.Positive(t, l.counts[what], "the load did not do %q: %v", what, l.counts)
	}

	// The preview ends when the load did, once Prometheus has scraped past that.
	end := time.Now()
	testwait.For(t, 30*time.Second, 250*time.Millisecond, func() error {
		v, err := prom.instant(t.Context(), `max(timestamp(queen_build_info))`, time.Now())
		if err != nil {
			return err
		}
		if len(v) == 0 || v[0].last() < float64(end.Add(scrapeInterval).Unix()) {
			return errors.New("Prometheus has not scraped past the end of the load yet")
		}
		return nil
	})
	start := begin.Add(5 * scrapeInterval)
	page := queryPanels(t, prom, raw, start, end)
	file := renderPreview(t, chromium, page)
	t.Logf("dashboard preview: %s", file)
}

// readJSON decodes the JSON file into v.
func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v), "%s", file)
}

// chromiumBinary finds the browser, "" when there is none.
func chromiumBinary() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// prometheus is a Prometheus server run by the test.
type prometheus struct {
	base string
	hc   *http.Client
}

// startPrometheus runs Debian's prometheus on 127.0.0.1, its storage in a temporary
// directory, scraping the broker's /metrics/prometheus every scrapeInterval, and
// waits until it is ready and has scraped the broker once. It is stopped (SIGTERM)
// by the test's cleanup.
func startPrometheus(t *testing.T, bin, target string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(conf, fmt.Appendf(nil, `global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
scrape_configs:
  - job_name: queen
    metrics_path: /metrics/prometheus
    static_configs:
      - targets: [%[2]q]
`, scrapeInterval, target), 0o644))
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+conf, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 15 * time.Second
	logs := &testlog.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start(), "start %s", bin)
	t.Cleanup(func() {
		cancel()
		// A clean exit on the signal makes Wait return the context's error.
		if err := cmd.Wait(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("prometheus: %v\n%s", err, logs.String())
		}
	})
	p := &prometheus{base: "http://" + addr, hc: &http.Client{Timeout: 30 * time.Second}}
	err := testwait.Until(30*time.Second, 250*time.Millisecond, func() error {
		v, err := p.instant(t.Context(), `up{job="queen"}`, time.Now())
		if err != nil {
			return err
		}
		if len(v) == 0 || v[0].last() != 1 {
			return fmt.Errorf("no successful scrape of %s yet: %v", target, v)
		}
		return nil
	})
	require.NoError(t, err, "prometheus log:\n%s", logs.String())
	return p
}

// freeAddr returns a 127.0.0.1 address with a port free at the time of the call.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// sample is one series of a query's answer: its labels and its points (Unix seconds
// and values; one point for an instant query).
type sample struct {
	Labels map[string]string
	T, V   []float64
}

func (s sample) last() float64 {
	if len(s.V) == 0 {
		return math.NaN()
	}
	return s.V[len(s.V)-1]
}

// instant runs an instant query at ts (/api/v1/query).
func (p *prometheus) instant(ctx context.Context, expr string, ts time.Time) ([]sample, error) {
	return p.get(ctx, "/api/v1/query", url.Values{"query": {expr}, "time": {unixString(ts)}})
}

// rangeQuery runs a range query (/api/v1/query_range).
func (p *prometheus) rangeQuery(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]sample, error) {
	return p.get(ctx, "/api/v1/query_range", url.Values{"query": {expr}, "start": {unixString(start)},
		"end": {unixString(end)}, "step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}})
}

func unixString(ts time.Time) string {
	return strconv.FormatFloat(float64(ts.UnixMilli())/1000, 'f', 3, 64)
}

// get calls Prometheus' query API and decodes a vector, matrix or scalar answer.
func (p *prometheus) get(ctx context.Context, path string, q url.Values) ([]sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var ans struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", path, b, err)
	}
	if ans.Status != "success" {
		return nil, fmt.Errorf("%s %s: %s", path, q.Get("query"), ans.Error)
	}
	type point [2]json.RawMessage
	var out []sample
	switch ans.Data.ResultType {
	case "matrix", "vector":
		var rs []struct {
			Metric map[string]string `json:"metric"`
			Values []point           `json:"values"`
			Value  *point            `json:"value"`
		}
		if err := json.Unmarshal(ans.Data.Result, &rs); err != nil {
			return nil, err
		}
		for _, r := range rs {
			if r.Value != nil {
				r.Values = append(r.Values, *r.Value)
			}
			s := sample{Labels: r.Metric}
			for _, pt := range r.Values {
				ts, v, err := decodePoint(pt)
				if err != nil {
					return nil, err
				}
				s.T, s.V = append(s.T, ts), append(s.V, v)
			}
			out = append(out, s)
		}
	case "scalar":
		var pt point
		if err := json.Unmarshal(ans.Data.Result, &pt); err != nil {
			return nil, err
		}
		ts, v, err := decodePoint(pt)
		if err != nil {
			return nil, err
		}
		out = append(out, sample{Labels: map[string]string{}, T: []float64{ts}, V: []float64{v}})
	default:
		return nil, fmt.Errorf("%s: result type %q", path, ans.Data.ResultType)
	}
	return out, nil
}

// decodePoint reads a [time, "value"] pair of Prometheus' API.
func decodePoint(pt [2]json.RawMessage) (float64, float64, error) {
	var ts float64
	var vs string
	if err := json.Unmarshal(pt[0], &ts); err != nil {
		return 0, 0, err
	}
	if err := json.Unmarshal(pt[1], &vs); err != nil {
		return 0, 0, err
	}
	v, err := strconv.ParseFloat(vs, 64)
	return ts, v, err
}

// queryPanels runs every query of every panel over [start, end] and returns the page
// to draw. Each failed query, and each empty answer of a panel outside mayBeEmpty, is
// collected and reported at the end, with the panel's title and the query.
func queryPanels(t *testing.T, prom *prometheus, raw previewDashboard, start, end time.Time) previewPage {
	t.Helper()
	var problems, empties []string
	page := previewPage{Title: raw.Title, From: start, To: end}
	for _, v := range raw.Templating.List {
		value := "Prometheus"
		if v.Type == "query" {
			value = "All"
		}
		page.Vars = append(page.Vars, v.Label+": "+value)
	}
	queried := 0
	for _, p := range flattenPreview(raw.Panels) {
		pv := previewPanelOf(p)
		if p.Type != "row" {
			vars := grafanaVars(raw, p, start, end)
			for _, tg := range p.Targets {
				expr, err := substitute(tg.Expr, vars)
				require.NoError(t, err, "panel %q query %s", p.Title, tg.RefID)
				var got []sample
				if p.Type == "timeseries" {
					step, _ := time.ParseDuration(vars["__interval"])
					pv.Step = step
					from, to := start.Truncate(step), end.Truncate(step)
					got, err = prom.rangeQuery(t.Context(), expr, from, to, step)
				} else {
					got, err = prom.instant(t.Context(), expr, end)
				}
				queried++
				if err != nil {
					problems = append(problems, fmt.Sprintf("panel %q query %s failed: %v\n    %s", p.Title, tg.RefID, err, expr))
					continue
				}
				if len(got) == 0 {
					line := fmt.Sprintf("panel %q query %s answered no series:\n    %s", p.Title, tg.RefID, expr)
					if why, ok := mayBeEmpty[p.Title]; ok {
						empties = append(empties, line+"\n    (allowed: "+why+")")
					} else {
						problems = append(problems, line)
					}
				}
				for _, s := range got {
					pv.Series = append(pv.Series, previewSeries{Name: legendName(tg.LegendFormat, expr, s.Labels), T: s.T, V: s.V})
				}
			}
		}
		page.Panels = append(page.Panels, pv)
	}
	t.Logf("%d queries over %s … %s (step and rate windows as Grafana would choose them)", queried,
		start.UTC().Format(time.TimeOnly), end.UTC().Format(time.TimeOnly))
	for _, e := range empties {
		t.Logf("empty, allowed: %s", e)
	}
	if len(problems) > 0 {
		t.Errorf("%d of %d dashboard queries failed or answered nothing:\n  %s", len(problems), queried, strings.Join(problems, "\n  "))
	}
	require.Positive(t, queried)
	return page
}

// flattenPreview lists the panels in the order Grafana lays them out: each row
// followed by its own panels when it is collapsed (Grafana stores them inside it).
func flattenPreview(ps []previewSource) []previewSource {
	var out []previewSource
	for _, p := range ps {
		out = append(out, p)
		for _, c := range p.Panels {
			c.inCollapsed = true
			out = append(out, c)
		}
	}
	return out
}

// grafanaVars gives each Grafana variable the dashboard's queries use the value
// Grafana would give it when the dashboard opens with its defaults over [start, end]:
//   - $instance, ${instance}: the variable's allValue (".*"), since it includes All
//     and opens on it; without allValue, the regular expression "." would not do, so
//     the substitution fails the test;
//   - $__interval: the panel's width in pixels is Grafana's maxDataPoints, so the
//     interval is (end-start)/width rounded as Grafana rounds it (roundInterval), at
//     least the data source's scrape interval (1 s here); it is also the range
//     queries' step;
//   - $__rate_interval: max($__interval + scrape interval, 4 × scrape interval);
//   - $__range: end-start in whole seconds.
func grafanaVars(d previewDashboard, p previewSource, start, end time.Time) map[string]string {
	width := panelWidth(p.GridPos.W)
	interval := max(scrapeInterval, roundInterval(end.Sub(start)/time.Duration(width)))
	vars := map[string]string{
		"__interval":      promDuration(interval),
		"__interval_ms":   strconv.FormatInt(interval.Milliseconds(), 10),
		"__rate_interval": promDuration(max(interval+scrapeInterval, 4*scrapeInterval)),
		"__range":         promDuration(end.Sub(start).Truncate(time.Second)),
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" && v.IncludeAll {
			vars[v.Name] = v.AllValue
		}
	}
	return vars
}

// roundInterval rounds a query interval as Grafana does: to the round duration of the
// band it falls in (1 s below 1.5 s, 2 s below 3.5 s, 5 s below 7.5 s, …).
func roundInterval(d time.Duration) time.Duration {
	bands := []struct{ below, to time.Duration }{
		{15 * time.Millisecond, 10 * time.Millisecond}, {35 * time.Millisecond, 20 * time.Millisecond},
		{75 * time.Millisecond, 50 * time.Millisecond}, {150 * time.Millisecond, 100 * time.Millisecond},
		{350 * time.Millisecond, 200 * time.Millisecond}, {750 * time.Millisecond, 500 * time.Millisecond},
		{1500 * time.Millisecond, time.Second}, {3500 * time.Millisecond, 2 * time.Second},
		{7500 * time.Millisecond, 5 * time.Second}, {12500 * time.Millisecond, 10 * time.Second},
		{17500 * time.Millisecond, 15 * time.Second}, {25 * time.Second, 20 * time.Second},
		{45 * time.Second, 30 * time.Second}, {90 * time.Second, time.Minute},
		{210 * time.Second, 2 * time.Minute}, {450 * time.Second, 5 * time.Minute},
		{750 * time.Second, 10 * time.Minute}, {1050 * time.Second, 15 * time.Minute},
		{1500 * time.Second, 20 * time.Minute}, {2700 * time.Second, 30 * time.Minute},
		{5400 * time.Second, time.Hour},
	}
	for _, b := range bands {
		if d < b.below {
			return b.to
		}
	}
	return d.Round(time.Hour)
}

// promDuration writes d as Prometheus reads a duration: whole seconds.
func promDuration(d time.Duration) string {
	return strconv.FormatInt(int64(d.Seconds()), 10) + "s"
}

// substitute replaces Grafana's variables in expr by their values; a variable without
// a value is an error, since the query would not mean what Grafana sends.
func substitute(expr string, vars map[string]string) (string, error) {
	var missing []string
	out := grafanaVar.ReplaceAllStringFunc(expr, func(v string) string {
		name := grafanaVar.FindStringSubmatch(v)[1]
		val, ok := vars[name]
		if !ok || val == "" {
			missing = append(missing, v)
			return v
		}
		return val
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("no value for %s in %s", strings.Join(slices.Compact(missing), ", "), expr)
	}
	return out, nil
}

// legendName is a series' name in the legend, as Grafana writes it: legendFormat with
// {{label}} replaced; without one (or "__auto") the metric's selector, or the query
// itself when the series has no labels.
func legendName(format, expr string, labels map[string]string) string {
	if format != "" && format != "__auto" {
		return legendLabel.ReplaceAllStringFunc(format, func(m string) string {
			return labels[legendLabel.FindStringSubmatch(m)[1]]
		})
	}
	if len(labels) == 0 {
		return expr
	}
	var parts []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range labels {
			if k != "__name__" && !yield(k) {
				return
			}
		}
	}) {
		parts = append(parts, fmt.Sprintf("%s=%q", k, labels[k]))
	}
	return labels["__name__"] + "{" + strings.Join(parts, ", ") + "}"
}
