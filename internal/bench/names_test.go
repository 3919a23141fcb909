package bench

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDocsListEveryResultName keeps docs/benchmarks.md in step with the result names:
// every name a run can report appears in "What is measured, against what", literally
// or with its partition count written N (mixed_b10_pN_e2e_p50_ms).
func TestDocsListEveryResultName(t *testing.T) {
	t.Parallel()

	data, err := os.ReadFile("../../docs/benchmarks.md")
	require.NoError(t, err)
	doc := string(data)
	start := strings.Index(doc, "## What is measured, against what")
	require.GreaterOrEqual(t, start, 0)
	section := doc[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}

	o := &Options{}
	o.defaults()
	names := o.caseNames()
	require.Len(t, names, len(slices.Compact(slices.Sorted(slices.Values(names)))), "case names are unique")
	for _, n := range axisPartitions()[1:] {
		names = append(names, "scale_push_b10_p"+strconv.Itoa(n), "scale_popack_b10_p"+strconv.Itoa(n))
	}
	for _, c := range o.mixedCaseList() {
		for _, suffix := range []string{"_e2e_p50_ms", "_e2e_p99_ms", "_paced", "_paced_e2e_p50_ms", "_paced_e2e_p99_ms"} {
			names = append(names, c.name+suffix)
		}
	}
	names = append(names, "longpoll_wake_p50_ms", "longpoll_wake_p99_ms", "rss_peak_mb",
		"cpu_s_per_mmsg", "cpu_s_per_mmsg_push_b100", "cpu_s_per_mmsg_popack_b100", "host_steal_pct")

	generic := regexp.MustCompile(`_p(100|10000|100000)(_|$)`)
	for _, name := range names {
		pattern := generic.ReplaceAllString(name, "_pN$2")
		require.True(t, strings.Contains(section, "`"+name+"`") || strings.Contains(section, "`"+pattern+"`"),
			"docs/benchmarks.md does not list %s", name)
	}
}
