package daemon

import (
	"io"
	"log/slog"

	"github.com/queenmq/queen/internal/config"
)

// newLogger builds the one logger of the process: JSON lines for journald by
// default, text when QUEEN_LOG_FORMAT=text; with syslog priority prefixes when out is
// the journal (journal.go).
func newLogger(cfg *config.Config, out io.Writer) *slog.Logger {
	out = logOutput(out)
	opts := &slog.HandlerOptions{Level: cfg.SlogLevel()}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(out, opts))
	}
	return slog.New(slog.NewJSONHandler(out, opts))
}
