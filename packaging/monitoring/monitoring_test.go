package monitoring_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/proxy/proxytest"
	"github.com/queenmq/queen/internal/testwait"
)

const (
	rulesFile     = "queen-alerts.yml"
	rulesTestFile = "queen-alerts.test.yml"
	dashboardFile = "queen-dashboard.json"
	// observabilityDoc is the page the runbook URLs point into.
	observabilityDoc = "../../docs/observability.md"
	runbookPrefix    = "https://github.com/queenmq/queen/blob/main/docs/observability.md#"
	// familiesTimeout bounds the wait for the families that appear only after traffic
	// and a backlog refresh (every 15 s).
	familiesTimeout = 60 * time.Second
)

// ruleFile is the part of a Prometheus rule file the tests read.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// ruleTestFile is the part of a promtool rule test file the tests read.
type ruleTestFile struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name          string `yaml:"name"`
		AlertRuleTest []struct {
			EvalTime  string           `yaml:"eval_time"`
			Alertname string           `yaml:"alertname"`
			ExpAlerts []map[string]any `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	SchemaVersion int `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Definition string          `json:"definition"`
			Datasource *datasourceRef  `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource *datasourceRef `json:"datasource"`
	Targets    []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource *datasourceRef `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's panels
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func readRules(t *testing.T) ruleFile {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	require.NoError(t, err)
	var rf ruleFile
	require.NoError(t, yaml.Unmarshal(b, &rf))
	require.NotEmpty(t, rf.Groups, "%s has no groups", rulesFile)
	return rf
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(b))
	var d dashboard
	require.NoError(t, dec.Decode(&d))
	return d
}

// allPanels lists the dashboard's panels, those inside collapsed rows included.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// promtool returns the path of promtool, or skips the test saying why it cannot run.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Skipf("promtool is not on PATH (%v): scripts/ensure-promtool.sh installs Debian's prometheus package "+
			"as root (make test runs it); without it the alert rules are not checked", err)
	}
	return path
}

// TestRulesPassPromtool runs promtool's syntax and semantic check of the rule file
// and its unit tests: every alert fires on the histories it must fire on, with the
// labels and rendered annotations expected, and stays silent on the others.
func TestRulesPassPromtool(t *testing.T) {
	t.Parallel()
	bin := promtool(t)
	for _, args := range [][]string{{"check", "rules", rulesFile}, {"test", "rules", rulesTestFile}} {
		out, err := exec.CommandContext(t.Context(), bin, args...).CombinedOutput()
		require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
		require.Contains(t, string(out), "SUCCESS", "promtool %s:\n%s", strings.Join(args, " "), out)
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
}

// TestEveryAlertIsTestedAndDocumented requires of each alert a severity of warning or
// critical, a summary, a description and a runbook URL whose anchor is a heading of
// docs/observability.md; and, in the promtool tests, at least one evaluation where it
// fires and one where it does not.
func TestEveryAlertIsTestedAndDocumented(t *testing.T) {
	t.Parallel()
	rf := readRules(t)
	b, err := os.ReadFile(rulesTestFile)
	require.NoError(t, err)
	var tf ruleTestFile
	require.NoError(t, yaml.Unmarshal(b, &tf))
	require.Equal(t, []string{rulesFile}, tf.RuleFiles)

	anchors := docAnchors(t)
	fires, silent := map[string]int{}, map[string]int{}
	for _, tc := range tf.Tests {
		for _, art := range tc.AlertRuleTest {
			if len(art.ExpAlerts) > 0 {
				fires[art.Alertname]++
			} else {
				silent[art.Alertname]++
			}
		}
	}
	var alerts []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts = append(alerts, r.Alert)
			require.Contains(t, []string{"warning", "critical"}, r.Labels["severity"], "alert %s: severity", r.Alert)
			for _, a := range []string{"summary", "description", "runbook_url"} {
				require.NotEmpty(t, r.Annotations[a], "alert %s: annotation %s", r.Alert, a)
			}
			anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], runbookPrefix)
			require.True(t, ok, "alert %s: runbook_url %q does not start with %s", r.Alert, r.Annotations["runbook_url"], runbookPrefix)
			require.Contains(t, anchors, anchor, "alert %s: no heading of %s has the anchor #%s", r.Alert, observabilityDoc, anchor)
			require.Positive(t, fires[r.Alert], "alert %s: no promtool test where it fires", r.Alert)
			require.Positive(t, silent[r.Alert], "alert %s: no promtool test where it does not fire", r.Alert)
		}
	}
	require.NotEmpty(t, alerts)
	for name := range fires {
		require.Contains(t, alerts, name, "%s tests an alert the rules do not define", rulesTestFile)
	}
	for name := range silent {
		require.Contains(t, alerts, name, "%s tests an alert the rules do not define", rulesTestFile)
	}
}

// docAnchors returns the anchors GitHub gives the headings of docs/observability.md:
// lowercased, punctuation other than '-' and '_' dropped, spaces turned into '-'.
func docAnchors(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(observabilityDoc)
	require.NoError(t, err)
	defer f.Close()
	drop := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	var anchors []string
	sc := bufio.NewScanner(f)
	inFence := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		anchors = append(anchors, strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(title), ""), " ", "-"))
	}
	require.NoError(t, sc.Err())
	return anchors
}

// TestDashboardShape checks what Grafana needs to import the dashboard anywhere: a
// schema version of at least 36, a data source variable of type prometheus that every
// panel and query uses, an instance variable, unique panel ids, and queries that parse
// as PromQL once Grafana's variables are replaced.
func TestDashboardShape(t *testing.T) {
	t.Parallel()
	d := readDashboard(t)
	require.GreaterOrEqual(t, d.SchemaVersion, 36)

	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Name == "datasource" {
			var q string
			require.NoError(t, json.Unmarshal(v.Query, &q))
			require.Equal(t, "prometheus", q, "the datasource variable must list Prometheus data sources")
		}
		if v.Datasource != nil {
			require.Equal(t, datasourceRef{Type: "prometheus", UID: "${datasource}"}, *v.Datasource, "variable %s", v.Name)
		}
	}
	require.Equal(t, "datasource", vars["datasource"])
	require.Equal(t, "query", vars["instance"])

	ids := map[int]string{}
	queries := 0
	for _, p := range allPanels(d.Panels) {
		require.NotContains(t, ids, p.ID, "panel %q reuses the id of panel %q", p.Title, ids[p.ID])
		ids[p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		require.NotNil(t, p.Datasource, "panel %q has no datasource", p.Title)
		require.Equal(t, datasourceRef{Type: "prometheus", UID: "${datasource}"}, *p.Datasource, "panel %q", p.Title)
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			require.NotNil(t, tg.Datasource, "panel %q query %s", p.Title, tg.RefID)
			require.Equal(t, "${datasource}", tg.Datasource.UID, "panel %q query %s", p.Title, tg.RefID)
			require.Contains(t, tg.Expr, `instance=~"$instance"`, "panel %q query %s ignores the instance variable", p.Title, tg.RefID)
			_, err := parseExpr(tg.Expr)
			require.NoError(t, err, "panel %q query %s: %s", p.Title, tg.RefID, tg.Expr)
			queries++
		}
	}
	require.Greater(t, queries, 20)
}

// grafanaVar matches a Grafana variable in a query: $name, ${name} or ${name:format}.
var grafanaVar = regexp.MustCompile(`\$\{?(\w+)(?::\w+)?\}?`)

// parseExpr parses a PromQL expression of the rules or of the dashboard, Grafana's
// interval variables replaced by a duration and the others by a plain word.
func parseExpr(expr string) (parser.Expr, error) {
	expr = grafanaVar.ReplaceAllStringFunc(expr, func(v string) string {
		if strings.Contains(v, "__") {
			return "5m" // $__rate_interval, $__interval, $__range
		}
		return "x"
	})
	return parser.NewParser(parser.Options{}).ParseExpr(expr)
}

// metricNames returns the metric names an expression selects. A selector without a
// literal name (a regular expression on __name__) is an error: its names could not be
// checked.
func metricNames(expr string) ([]string, error) {
	e, err := parseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	var bad error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel && name == "" {
				if m.Type != labels.MatchEqual {
					bad = fmt.Errorf("selector %s names its metrics by a pattern", vs)
				}
				name = m.Value
			}
		}
		if name != "" {
			names = append(names, name)
		}
		return nil
	})
	return names, bad
}

// labelValuesMetric matches the metric of a Grafana label_values(metric, label) query.
var labelValuesMetric = regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)

// usedMetrics maps each metric name the rules and the dashboard query to where it is
// used. Names the rule file records itself (queen:expected_brokers) are left out.
func usedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	used := map[string][]string{}
	add := func(where, expr string) {
		names, err := metricNames(expr)
		require.NoError(t, err, "%s: %s", where, expr)
		require.NotEmpty(t, names, "%s selects no metric: %s", where, expr)
		for _, n := range names {
			used[n] = append(used[n], where)
		}
	}
	rf := readRules(t)
	recorded := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
			}
		}
	}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				add(rulesFile+" alert "+r.Alert, r.Expr)
			}
		}
	}
	d := readDashboard(t)
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			add(fmt.Sprintf("%s panel %q query %s", dashboardFile, p.Title, tg.RefID), tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValuesMetric.FindStringSubmatch(v.Definition)
		require.NotNil(t, m, "variable %s: %q is not label_values(metric, label)", v.Name, v.Definition)
		add(fmt.Sprintf("%s variable %s", dashboardFile, v.Name), m[1])
	}
	for name := range recorded {
		delete(used, name)
	}
	return used
}

// TestQueriedMetricsAreExported starts a broker, gives it a little traffic (pushes, a
// queue-mode pop with auto-ack, a consumer group's pop that stays leased) so that the
// families labelled by queue and group exist, and requires every metric name of every
// alert expression and every dashboard query to be a family of its
// /metrics/prometheus (a histogram's or summary's _bucket, _sum and _count series
// count as their family); a queen_proxy_ name, of a queen-proxy's (admin listener) in
// front of it. Families that appear only after the backlog refresh are waited for, up
// to a deadline.
func TestQueriedMetricsAreExported(t *testing.T) {
	t.Parallel()
	used := usedMetrics(t)
	srv := daemontest.Start(t, daemontest.Options{})
	proxy := proxytest.Start(t, proxytest.Options{Backends: []string{srv.URL}})
	client := &http.Client{Timeout: 30 * time.Second}

	call := func(method, path, body string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Less(t, resp.StatusCode, 300, "%s %s: %s", method, path, b)
		require.Contains(t, string(b), `"orders"`, "%s %s: %s", method, path, b)
	}
	call(http.MethodPost, "/api/v1/push", `{"items":[
		{"queue":"orders","payload":{"n":1}},{"queue":"orders","payload":{"n":2}},{"queue":"orders","payload":{"n":3}}]}`)
	call(http.MethodGet, "/api/v1/pop/queue/orders?autoAck=true&batch=1&wait=false", "")
	call(http.MethodGet, "/api/v1/pop/queue/orders?consumerGroup=billing&batch=1&wait=false", "")

	var missing []string
	err := testwait.Until(familiesTimeout, 500*time.Millisecond, func() error {
		families, err := scrape(t, client, srv.URL, "")
		if err != nil {
			return err
		}
		proxyFamilies, err := scrape(t, client, proxy.AdminURL, proxytest.AdminToken)
		if err != nil {
			return err
		}
		missing = missing[:0]
		for name := range used {
			from := families
			if strings.HasPrefix(name, "queen_proxy_") {
				from = proxyFamilies
			}
			if !exported(from, name) {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%d names not exported yet", len(missing))
		}
		return nil
	})
	if err != nil {
		sort.Strings(missing)
		var report strings.Builder
		for _, name := range missing {
			fmt.Fprintf(&report, "\n  %s, used by:", name)
			for _, where := range slices.Compact(slices.Sorted(slices.Values(used[name]))) {
				fmt.Fprintf(&report, "\n    %s", where)
			}
		}
		t.Fatalf("after %s (%v), /metrics/prometheus exports no family for:%s", familiesTimeout, err, report.String())
	}
	t.Logf("all %d metric names queried by the rules and the dashboard are exported", len(used))
}

// scrape reads /metrics/prometheus in the text format (with token as the bearer, if
// any) and returns its families.
func scrape(t *testing.T, client *http.Client, base, token string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/metrics/prometheus", nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics/prometheus: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics/prometheus: %w", err)
	}
	if len(families) == 0 {
		return nil, errors.New("/metrics/prometheus has no families")
	}
	return families, nil
}

// exported reports whether a query's metric name is served: a family of that name, or
// the _bucket, _sum or _count series of a histogram (_sum, _count of a summary).
func exported(families map[string]*dto.MetricFamily, name string) bool {
	if _, ok := families[name]; ok {
		return true
	}
	for suffix, types := range map[string][]dto.MetricType{
		"_bucket": {dto.MetricType_HISTOGRAM},
		"_sum":    {dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY},
		"_count":  {dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY},
	} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		if f, ok := families[base]; ok && slices.Contains(types, f.GetType()) {
			return true
		}
	}
	return false
}

// TestMetricNamesOfExpressions pins the name extraction the live check relies on:
// every selector counts, in functions, aggregations, binary operations and
// subqueries, Grafana variables are tolerated, and a name given by pattern is refused.
func TestMetricNamesOfExpressions(t *testing.T) {
	t.Parallel()
	names, err := metricNames(`histogram_quantile(0.99, sum by (le) (rate(a_bucket{route!~"/x.*",instance=~"$instance"}[$__rate_interval])))
		/ on (instance) group_left max_over_time(b[5m:1m]) or {__name__="c"} and vector(1)`)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a_bucket", "b", "c"}, names)

	_, err = metricNames(`{__name__=~"queen_.*"}`)
	require.Error(t, err)

	families := map[string]*dto.MetricFamily{
		"h": {Type: dto.MetricType_HISTOGRAM.Enum()},
		"s": {Type: dto.MetricType_SUMMARY.Enum()},
		"g": {Type: dto.MetricType_GAUGE.Enum()},
	}
	for name, want := range map[string]bool{
		"h": true, "h_bucket": true, "h_sum": true, "h_count": true,
		"s": true, "s_bucket": false, "s_sum": true, "s_count": true,
		"g": true, "g_sum": false, "g_count": false, "missing": false,
	} {
		require.Equal(t, want, exported(families, name), name)
	}
}
