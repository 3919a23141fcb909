package appliance

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Each line slog writes gets the syslog priority of its level, whatever the format.
func TestJournalWriterPrefixesThePriority(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			w := journalWriter{&buf}
			opts := &slog.HandlerOptions{Level: slog.LevelDebug}
			var h slog.Handler = slog.NewJSONHandler(w, opts)
			if format == "text" {
				h = slog.NewTextHandler(w, opts)
			}
			logger := slog.New(h)
			// A message and an attribute that look like levels must not confuse it.
			logger.Debug("level=ERROR in the message", "level_hint", "ERROR")
			logger.Info("ready")
			logger.Warn("configuration warning")
			logger.Error("failed")
			logger.Log(context.Background(), slog.LevelError+2, "worse")

			lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
			require.Len(t, lines, 5)
			for i, want := range []string{"<7>", "<6>", "<4>", "<3>", "<3>"} {
				require.True(t, strings.HasPrefix(lines[i], want+"{") || strings.HasPrefix(lines[i], want+"time="),
					"line %d: %s", i, lines[i])
			}
		})
	}
}

// A line that is not slog's gets the default priority, info.
func TestSyslogPriorityDefaultsToInfo(t *testing.T) {
	t.Parallel()
	require.Equal(t, "<6>", syslogPriority([]byte("plain text\n")))
	require.Equal(t, "<6>", syslogPriority(nil))
}

// Only the process's stdout connected to the journal gets prefixes; any other writer
// (tests, a file) is used as it is.
func TestLogOutputLeavesOtherWritersAlone(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	require.Equal(t, &buf, LogOutput(&buf))
}
