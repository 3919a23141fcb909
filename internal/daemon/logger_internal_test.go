package daemon

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/config"
)

// TestLogLinesNameTheInstance: under QUEEN_INSTANCE (queen@.service) every line says
// which replica wrote it, in JSON and in text; without it no line carries the key.
func TestLogLinesNameTheInstance(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"json", "text"} {
		for _, instance := range []string{"alpha", ""} {
			env := []string{"QUEEN_LOG_FORMAT=" + format}
			if instance != "" {
				env = append(env, "QUEEN_INSTANCE="+instance)
			}
			cfg, err := config.Load(env)
			require.NoError(t, err)
			var out bytes.Buffer
			logger, _ := newLogger(cfg, &out)
			logger.Info("one", "k", 1)
			logger.Warn("two")
			lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
			require.Len(t, lines, 2)
			for _, line := range lines {
				if format == "json" {
					var m map[string]any
					require.NoError(t, json.Unmarshal(line, &m))
					if instance == "" {
						require.NotContains(t, m, "instance")
					} else {
						require.Equal(t, instance, m["instance"], "%s", line)
					}
					continue
				}
				if instance == "" {
					require.NotContains(t, string(line), "instance=")
				} else {
					require.Contains(t, string(line), " instance="+instance, "%s", line)
				}
			}
		}
	}
}
