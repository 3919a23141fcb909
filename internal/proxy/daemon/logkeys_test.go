package daemon_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every JSON log line has each key once: the health checks' lines say component
// backends, not component gateway and then backends.
func TestLogLinesHaveNoDuplicateKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{env: []string{"QUEEN_PROXY_LOG_FORMAT=json", "LOG_LEVEL=info"}})
	checked := 0
	for line := range strings.Lines(b.logs.String()) {
		keys := topLevelKeys(t, line)
		seen := map[string]bool{}
		for _, k := range keys {
			require.False(t, seen[k], "key %q twice in %s", k, line)
			seen[k] = true
		}
		if strings.Contains(line, `"msg":"backend state"`) {
			var v struct{ Component string }
			require.NoError(t, json.Unmarshal([]byte(line), &v))
			require.Equal(t, "backends", v.Component)
			checked++
		}
	}
	require.Positive(t, checked, "no backend state line in %s", b.logs.String())
}

// topLevelKeys lists the keys of the JSON object line in order, repeats included.
func topLevelKeys(t *testing.T, line string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	tok, err := dec.Token()
	require.NoError(t, err, line)
	require.Equal(t, json.Delim('{'), tok, line)
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err, line)
		keys = append(keys, k.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip), line)
	}
	return keys
}
