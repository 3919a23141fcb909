package daemon

import (
	"io"
	"log/slog"

	"github.com/queenmq/queen/internal/config"
)

// newLogger builds the one logger of the process: JSON lines for journald by
// default, text when QUEEN_LOG_FORMAT=text.
func newLogger(cfg *config.Config, out io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.SlogLevel()}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(out, opts))
	}
	return slog.New(slog.NewJSONHandler(out, opts))
}
