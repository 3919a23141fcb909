package daemon_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
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

// documentedFamily is one row of a metrics table of docs/observability.md.
type documentedFamily struct {
	kind   string   // gauge, counter or histogram
	labels []string // sorted label names
}

// familyRow is a table row naming one or more families: | `name`[, `name`] | kind | labels | meaning |.
var familyRow = regexp.MustCompile("^\\| (`queen_[a-z_]+`(?:, `queen_[a-z_]+`)*) \\| (gauge|counter|histogram) \\|([^|]*)\\|")

// backticked finds `...` spans; a label cell holds names, or name="value" / name = values.
var backticked = regexp.MustCompile("`([^`]+)`")

// readMetricDocs reads the metric tables of docs/observability.md: family name to its
// documented type and labels.
func readMetricDocs(t *testing.T) map[string]documentedFamily {
	t.Helper()
	f, err := os.Open("../../docs/observability.md")
	require.NoError(t, err)
	defer f.Close()
	out := map[string]documentedFamily{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := familyRow.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		var labels []string
		cell, _, _ := strings.Cut(m[3], " = ") // `state` = `idle`, `acquired`: the values are not labels
		for _, l := range backticked.FindAllStringSubmatch(cell, -1) {
			name, _, _ := strings.Cut(l[1], "=")
			name = strings.TrimSpace(name)
			if regexp.MustCompile(`^[a-z_]+$`).MatchString(name) && !slices.Contains(labels, name) {
				labels = append(labels, name)
			}
		}
		slices.Sort(labels)
		for _, n := range backticked.FindAllStringSubmatch(m[1], -1) {
			out[n[1]] = documentedFamily{kind: m[2], labels: labels}
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out)
	return out
}

// TestMetricDocsMatchTheRegistry drives a broker through pushes, pops, acks (one to
// the dead-letter queue), a transaction and a leased group pop, waits for a backlog
// refresh, and compares every queen_* family it serves at /metrics/prometheus with the
// tables of docs/observability.md: each served family is documented with its type and
// labels, and each documented family is served.
func TestMetricDocsMatchTheRegistry(t *testing.T) {
	t.Parallel()
	srv := daemontest.Start(t, daemontest.Options{})
	call := func(method, path, body string) []byte {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
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

	docs := readMetricDocs(t)
	var served map[string]*dto.MetricFamily
	testwait.For(t, 45*time.Second, 200*time.Millisecond, func() error {
		served = scrapeFamilies(t, srv.URL)
		if served["queen_consumer_group_lag_messages"] == nil {
			return errors.New("no backlog refresh since the traffic yet: no consumer group gauges")
		}
		return nil
	})
	for name, mf := range served {
		if !strings.HasPrefix(name, "queen_") {
			continue
		}
		d, ok := docs[name]
		require.True(t, ok, "%s is served but not documented in docs/observability.md", name)
		require.Equal(t, d.kind, strings.ToLower(mf.GetType().String()), "the documented type of %s", name)
		require.Equal(t, d.labels, labelNames(mf), "the documented labels of %s", name)
	}
	for name := range docs {
		require.Contains(t, served, name, "documented in docs/observability.md, not served")
	}
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
