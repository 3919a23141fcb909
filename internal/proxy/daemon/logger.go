package daemon

import (
	"io"
	"log/slog"
	"runtime"

	"github.com/queenmq/queen/internal/proxy/config"
)

func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func goVersion() string { return runtime.Version() }
