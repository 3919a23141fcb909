package browsertest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// formatSecs runs in the page: it imports the app's own format module (the hashed file
// the app loaded) and leaves what secs and ms print for each input in window.qtSecs.
const formatSecs = `(async () => {
  const url = (p) => performance.getEntriesByType('resource').map((e) => e.name).find((n) => n.endsWith(p));
  const f = await import(url('/lib/format.js'));
  const out = {};
  for (const v of [4, 30.4, 59.4, 59.6, 61, 119.7, 3599.6, 3725, 86399.9]) out[String(v)] = f.secs(v);
  out['ms 59600'] = f.ms(59600);
  out['null'] = f.secs(null);
  window.qtSecs = out;
})()`

// TestFormatSecs: durations are rounded to whole seconds before they are split into
// units, so no unit reads 60 ("1m 60s", "60s").
func TestFormatSecs(t *testing.T) {
	t.Parallel()
	tb := runInApp(t, "format durations", formatSecs, "qtSecs")

	require.Equal(t, map[string]string{
		"4":        "4s",
		"30.4":     "30s",
		"59.4":     "59s",
		"59.6":     "1m 0s",
		"61":       "1m 1s",
		"119.7":    "2m 0s",
		"3599.6":   "1h 0m",
		"3725":     "1h 2m",
		"86399.9":  "1d 0h",
		"ms 59600": "1m 0s",
		"null":     "—",
	}, eval[map[string]string](tb, `window.qtSecs`))
	tb.clean("the formatting")
}
