package daemon_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/testwait"
)

// updateMetricDocs rewrites the generated metric tables of docs/observability.md
// instead of comparing them (updateMetricDocsCommand).
var updateMetricDocs = flag.Bool("update", false,
	"TestMetricDocsMatchTheRegistry: rewrite the metric tables of docs/observability.md from the registry")

// updateMetricDocsCommand rewrites the tables (QUEEN_TEST_DATABASE_URL set, or under
// scripts/pgtest.sh run --).
const updateMetricDocsCommand = "go test ./internal/daemon -run TestMetricDocsMatchTheRegistry -args -update"

// observabilityDoc is the page whose metric tables the registry generates.
const observabilityDoc = "../../docs/observability.md"

// The markers around a generated table: <!-- metrics:begin NAME --> … <!-- metrics:end -->.
const (
	regionBegin = "<!-- metrics:begin "
	regionEnd   = "<!-- metrics:end -->"
)

// metricRegion is one generated table of docs/observability.md: its name in the
// begin marker and the families it shows, in the order of its rows.
type metricRegion struct {
	name     string
	families []string
}

// metricRegions places every queen_* family the broker serves in exactly one table.
// A new family goes in the list of the table it belongs to; the test fails naming a
// served family that is in none.
var metricRegions = []metricRegion{
	{"build", []string{"queen_build_info", "queen_uptime_seconds"}},
	{"http", []string{
		"queen_http_requests_total", "queen_http_request_duration_seconds", "queen_http_requests_in_flight",
	}},
	{"broker", []string{
		"queen_pop_longpolls_parked", "queen_pop_longpoll_rechecks_total", "queen_pop_claimed_ahead_total",
		"queen_messages_pushed_total", "queen_messages_popped_total", "queen_messages_acked_total",
		"queen_messages_dead_lettered_total", "queen_requests_total", "queen_db_errors_total",
		"queen_activity_pending_buckets", "queen_activity_dropped_buckets_total",
		"queen_maintenance_mode_enabled", "queen_pop_maintenance_mode_enabled",
		"queen_push_statements_total", "queen_push_statement_pushes_total", "queen_push_statement_paths_total", "queen_ack_statement_paths_total", "queen_push_wait_expired_total", "queen_push_echoes_total",
		"queen_push_waiting", "queen_wakeup_notifications_total",
	}},
	{"streams", []string{
		"queen_stream_cycles_total", "queen_stream_state_ops_total", "queen_stream_sink_pushes_total",
		"queen_stream_state_reads_total",
	}},
	{"spool", []string{
		"queen_spool_pending_records", "queen_spool_bytes", "queen_spool_oldest_age_seconds",
		"queen_spool_segments", "queen_spool_failed_records", "queen_spool_healthy",
		"queen_spool_corrupt_regions_total", "queen_spool_appended_records_total",
		"queen_spool_replayed_records_total", "queen_spool_write_errors_total",
		"queen_file_buffer_pending", "queen_file_buffer_failed", "queen_file_buffer_db_healthy",
	}},
	{"maintenance", []string{
		"queen_maintenance_runs_total", "queen_maintenance_run_duration_seconds", "queen_maintenance_rows_total",
		"queen_maintenance_last_success_timestamp_seconds",
	}},
	{"pool", []string{
		"queen_db_pool_max_connections", "queen_db_pool_connections", "queen_db_pool_size",
		"queen_db_pool_idle", "queen_db_pool_active", "queen_db_pool_acquire_waits_total",
		"queen_db_pool_acquire_wait_seconds_total",
		"queen_db_unanswered_statements_total", "queen_db_timeline", "queen_db_timeline_behind",
		"queen_db_timeline_regressions_total", "queen_db_commits_stalled", "queen_db_stalled_statements_total",
		"queen_db_synchronous_replication",
	}},
	{"backlog", []string{
		"queen_queue_messages", "queen_queue_oldest_pending_age_seconds", "queen_queue_dlq_messages",
		"queen_dlq_depth_by_queue", "queen_dlq_depth",
		"queen_metrics_refresh_success", "queen_metrics_refresh_duration_seconds",
		"queen_metrics_refresh_timestamp_seconds", "queen_metrics_refresh_truncated",
		"queen_consumer_group_lag_messages", "queen_consumer_group_lag_seconds", "queen_consumer_group_in_flight",
		"queen_metrics_refresh_groups_truncated",
	}},
}

// TestMetricDocsMatchTheRegistry drives a broker through pushes, pops, acks (one to
// the dead-letter queue), a transaction and a leased group pop, and waits until it
// serves every family of metricRegions: the backlog families come with the first
// backlog refresh, the maintenance families with the first job cycles, the spool
// families with the spool every daemontest broker has. It then generates each table
// of docs/observability.md from the served families (name, type, label names in
// alphabetical order, HELP text as the meaning) and compares it with the doc, table
// by table. Every served queen_* family must be in exactly one table. With -update it
// rewrites the tables instead.
func TestMetricDocsMatchTheRegistry(t *testing.T) {
	t.Parallel()
	assigned := map[string]string{}
	for _, r := range metricRegions {
		for _, name := range r.families {
			prev, dup := assigned[name]
			require.False(t, dup, "%s is in the tables %q and %q of metricRegions", name, prev, r.name)
			assigned[name] = r.name
		}
	}

	srv := daemontest.Start(t, daemontest.Options{})
	driveBrokerForMetricDocs(t, srv.URL)
	var served map[string]*dto.MetricFamily
	testwait.For(t, 60*time.Second, 200*time.Millisecond, func() error {
		served = scrapeFamilies(t, srv.URL)
		var missing []string
		for name := range assigned {
			if served[name] == nil {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			return fmt.Errorf("in metricRegions, not served (yet): %s", strings.Join(missing, ", "))
		}
		return nil
	})
	for name := range served {
		if strings.HasPrefix(name, "queen_") {
			_, ok := assigned[name]
			require.True(t, ok, "%s is served but in no table: add it to the table of metricRegions "+
				"(metrics_docs_test.go) it belongs to, then run %s", name, updateMetricDocsCommand)
		}
	}

	doc, err := os.ReadFile(observabilityDoc)
	require.NoError(t, err)
	lines := strings.Split(string(doc), "\n")
	regions, err := findMetricRegions(lines)
	require.NoError(t, err)
	var diffs []string
	for _, r := range metricRegions {
		span, ok := regions[r.name]
		require.True(t, ok, "docs/observability.md has no table %s%s -->", regionBegin, r.name)
		want := metricTable(r.families, served)
		if got := lines[span[0]:span[1]]; !slices.Equal(got, want) {
			diffs = append(diffs, "table "+r.name+":\n"+lineDiff(got, want))
		}
	}
	for name := range regions {
		require.True(t, slices.ContainsFunc(metricRegions, func(r metricRegion) bool { return r.name == name }),
			"docs/observability.md has a table %q that metricRegions does not know", name)
	}
	if len(diffs) == 0 {
		return
	}
	if *updateMetricDocs {
		rewriteMetricDocs(t, served)
		return
	}
	t.Fatalf("the metric tables of docs/observability.md differ from what the broker serves "+
		"(- the doc, + the registry):\n%s\nIf the registry is right, run (with QUEEN_TEST_DATABASE_URL set, "+
		"or under scripts/pgtest.sh run --)\n\t%s\nto rewrite them; a meaning is changed in the family's HELP "+
		"text, not in the doc.", strings.Join(diffs, "\n"), updateMetricDocsCommand)
}

// driveBrokerForMetricDocs gives the labelled families series: pushes to two
// partitions, a pop of two messages acknowledged completed and dlq, a pop by the
// consumer group billing (left leased), and a transaction.
func driveBrokerForMetricDocs(t *testing.T, base string) {
	t.Helper()
	call := func(method, path, body string) []byte {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.Less(t, res.StatusCode, 300, "%s %s: %s", method, path, b)
		return b
	}
	call("POST", "/api/v1/push", `{"items":[{"queue":"docs.q","partition":"a","payload":1},
		{"queue":"docs.q","partition":"a","payload":2},{"queue":"docs.q","partition":"b","payload":3}]}`)
	var popped struct {
		Messages []struct {
			TransactionID string `json:"transactionId"`
			PartitionID   string `json:"partitionId"`
			LeaseID       string `json:"leaseId"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(call("GET", "/api/v1/pop/queue/docs.q/partition/a?batch=2", ""), &popped))
	require.Len(t, popped.Messages, 2)
	acks := `{"acknowledgments":[`
	for i, m := range popped.Messages {
		status := "completed"
		if i == 1 {
			status = "dlq"
		}
		if i > 0 {
			acks += ","
		}
		acks += `{"transactionId":"` + m.TransactionID + `","partitionId":"` + m.PartitionID +
			`","leaseId":"` + m.LeaseID + `","status":"` + status + `"}`
	}
	call("POST", "/api/v1/ack/batch", acks+`]}`)
	call("GET", "/api/v1/pop/queue/docs.q/partition/b?consumerGroup=billing", "")
	call("POST", "/api/v1/transaction", `{"operations":[{"type":"push","items":[{"queue":"docs.q","payload":4}]}]}`)
}

// findMetricRegions maps the name of each generated table of the doc to the span of
// lines between its markers, [first, end).
func findMetricRegions(lines []string) (map[string][2]int, error) {
	out := map[string][2]int{}
	open, start := "", 0
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, regionBegin):
			if open != "" {
				return nil, fmt.Errorf("docs/observability.md:%d: table %q begins inside table %q", i+1, l, open)
			}
			open = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(l, regionBegin), "-->"))
			if _, dup := out[open]; dup || open == "" {
				return nil, fmt.Errorf("docs/observability.md:%d: table name %q empty or used twice", i+1, open)
			}
			start = i + 1
		case l == regionEnd:
			if open == "" {
				return nil, fmt.Errorf("docs/observability.md:%d: %s without a begin marker", i+1, regionEnd)
			}
			out[open] = [2]int{start, i}
			open = ""
		}
	}
	if open != "" {
		return nil, fmt.Errorf("docs/observability.md: table %q has no %s", open, regionEnd)
	}
	return out, nil
}

// metricTable is the Markdown table of families, as served: name, type, label
// names in alphabetical order, HELP text.
func metricTable(families []string, served map[string]*dto.MetricFamily) []string {
	out := []string{"| Family | Type | Labels | Meaning |", "|---|---|---|---|"}
	for _, name := range families {
		mf := served[name]
		var labels []string
		for _, l := range labelNames(mf) {
			labels = append(labels, "`"+l+"`")
		}
		row := "|"
		for _, cell := range []string{"`" + name + "`", strings.ToLower(mf.GetType().String()),
			strings.Join(labels, ", "), helpCell(mf.GetHelp())} {
			if cell != "" {
				row += " " + cell
			}
			row += " |"
		}
		out = append(out, row)
	}
	return out
}

// codeWord is a run of the characters of names, paths and label matchers in a HELP
// text, with what may follow it.
var codeWord = regexp.MustCompile(`[A-Za-z0-9_./*{}="-]+`)

// helpCell is a HELP text as a Markdown table cell. HELP is plain text; the words
// that are code (metric and label names, settings, paths, label matchers: those
// with an underscore, a leading slash or an equals sign) are put in backticks, so
// that __QUEUE_MODE__ or queen_consumer_group_* do not turn into emphasis, and the
// rest is escaped where Markdown would read it.
func helpCell(help string) string {
	help = strings.ReplaceAll(help, "\n", " ")
	var b strings.Builder
	at := 0
	for _, m := range codeWord.FindAllStringIndex(help, -1) {
		word := strings.TrimRight(help[m[0]:m[1]], ".,")
		end := m[0] + len(word)
		b.WriteString(escapeMarkdown(help[at:m[0]]))
		if strings.ContainsAny(word, "_=") || strings.HasPrefix(word, "/") {
			b.WriteString("`" + word + "`")
		} else {
			b.WriteString(escapeMarkdown(word))
		}
		at = end
	}
	b.WriteString(escapeMarkdown(help[at:]))
	return b.String()
}

// escapeMarkdown escapes the characters of plain text that a Markdown table cell
// would take for syntax.
func escapeMarkdown(s string) string {
	return strings.NewReplacer("|", `\|`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;").Replace(s)
}

// rewriteMetricDocs replaces every generated table of a fresh read of the doc (the
// rest of the page may have changed since the comparison) with the registry's.
func rewriteMetricDocs(t *testing.T, served map[string]*dto.MetricFamily) {
	t.Helper()
	info, err := os.Stat(observabilityDoc)
	require.NoError(t, err)
	doc, err := os.ReadFile(observabilityDoc)
	require.NoError(t, err)
	lines := strings.Split(string(doc), "\n")
	regions, err := findMetricRegions(lines)
	require.NoError(t, err)
	inDocOrder := slices.Clone(metricRegions)
	slices.SortFunc(inDocOrder, func(a, b metricRegion) int { return regions[a.name][0] - regions[b.name][0] })
	var out []string
	at := 0
	for _, r := range inDocOrder {
		span := regions[r.name]
		out = append(out, lines[at:span[0]]...)
		out = append(out, metricTable(r.families, served)...)
		at = span[1]
	}
	out = append(out, lines[at:]...)
	require.NoError(t, os.WriteFile(observabilityDoc, []byte(strings.Join(out, "\n")), info.Mode().Perm()))
	t.Logf("rewrote the metric tables of docs/observability.md from the registry")
}

// lineDiff shows how got becomes want, line by line: "- " lines only in got, "+ "
// lines only in want, "  " lines in both (a longest common subsequence).
func lineDiff(got, want []string) string {
	// common[i][j] is the length of the longest common subsequence of got[i:] and want[j:].
	common := make([][]int, len(got)+1)
	for i := range common {
		common[i] = make([]int, len(want)+1)
	}
	for i := len(got) - 1; i >= 0; i-- {
		for j := len(want) - 1; j >= 0; j-- {
			if got[i] == want[j] {
				common[i][j] = common[i+1][j+1] + 1
			} else {
				common[i][j] = max(common[i+1][j], common[i][j+1])
			}
		}
	}
	var b strings.Builder
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case i < len(got) && j < len(want) && got[i] == want[j]:
			b.WriteString("  " + got[i] + "\n")
			i++
			j++
		case i < len(got) && (j == len(want) || common[i+1][j] >= common[i][j+1]):
			b.WriteString("- " + got[i] + "\n")
			i++
		default:
			b.WriteString("+ " + want[j] + "\n")
			j++
		}
	}
	return b.String()
}

// scrapeFamilies reads /metrics/prometheus.
func scrapeFamilies(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(base + "/metrics/prometheus")
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	require.NoError(t, err)
	return mfs
}

// labelNames is the sorted union of the label names of a family's samples.
func labelNames(mf *dto.MetricFamily) []string {
	var out []string
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if !slices.Contains(out, l.GetName()) {
				out = append(out, l.GetName())
			}
		}
	}
	slices.Sort(out)
	return out
}
