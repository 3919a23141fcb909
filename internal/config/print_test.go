package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPrint(t *testing.T) {
	t.Parallel()

	c := mustLoad(t, "PORT=7000", "JWT_SECRET=hunter2", "JWT_ISSUER=my issuer", "QUEEN_INSTANCE=a#b")
	var buf bytes.Buffer
	c.Print(&buf)
	out := buf.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")

	require.Len(t, lines, len(table()))
	require.True(t, slices.IsSorted(lines), "sorted by name")
	require.Contains(t, lines, "PORT=7000  # env")
	require.Contains(t, lines, "HOST=0.0.0.0  # default")
	require.Contains(t, lines, "JWT_SECRET=<redacted>  # env")
	require.Contains(t, lines, "PG_PASSWORD=<redacted>  # default", "a non-empty default secret is redacted too")
	require.Contains(t, lines, "QUEEN_ENCRYPTION_KEY=  # default", "an empty secret shows as empty")
	require.Contains(t, lines, `JWT_ISSUER="my issuer"  # env`)
	require.Contains(t, lines, `QUEEN_INSTANCE="a#b"  # env`)
	require.Contains(t, lines, "DB_CONNECTION_TIMEOUT=2000  # default", "values keep the variable's units")
	require.Contains(t, lines, "JWT_SKIP_PATHS=/health,/metrics/prometheus,/metrics,/  # default")
	require.NotContains(t, out, "hunter2")
	require.Equal(t, out, c.String())
	require.NotContains(t, fmt.Sprintf("%v %+v %s", c, c, c), "hunter2")
}

func TestPrintRedactsCredentialsAndKeys(t *testing.T) {
	t.Parallel()

	key := strings.Repeat("ab", 32)
	c := mustLoad(t, "QUEEN_ENCRYPTION_KEY="+key, "PG_PASSWORD=pw with spaces")
	out := c.String()
	require.Contains(t, out, "QUEEN_ENCRYPTION_KEY=<redacted>  # env\n")
	require.Contains(t, out, "PG_PASSWORD=<redacted>  # env\n")
	require.NotContains(t, out, key)
	require.NotContains(t, out, "pw with spaces")
}

func TestLogAttrs(t *testing.T) {
	t.Parallel()

	c := mustLoad(t, "PORT=7000", "PG_PASSWORD=hunter2")
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	logger.LogAttrs(t.Context(), slog.LevelInfo, "effective configuration", c.LogAttrs()...)
	logger.Info("as a value", "config", c)
	require.NotContains(t, buf.String(), "hunter2")

	var first map[string]any
	line, _, _ := strings.Cut(buf.String(), "\n")
	require.NoError(t, json.Unmarshal([]byte(line), &first))
	require.Equal(t, map[string]any{"value": "7000", "source": "env"}, first["PORT"])
	require.Equal(t, map[string]any{"value": "<redacted>", "source": "env"}, first["PG_PASSWORD"])
	require.Equal(t, map[string]any{"value": "0.0.0.0", "source": "default"}, first["HOST"])
	require.Len(t, c.LogAttrs(), len(table()))
}

func TestSlogLevel(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		level string
		want  slog.Level
	}{
		{"trace", slog.LevelDebug - 4}, {"debug", slog.LevelDebug}, {"info", slog.LevelInfo},
		{"warn", slog.LevelWarn}, {"error", slog.LevelError},
	} {
		t.Run(tc.level, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, mustLoad(t, "LOG_LEVEL="+tc.level).SlogLevel())
		})
	}
}
