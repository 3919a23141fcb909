package daemon

import (
	"context"
	"io"
	"log/slog"

	"github.com/queenmq/queen/internal/appliance"
	"github.com/queenmq/queen/internal/buildinfo"
	"github.com/queenmq/queen/internal/config"
)

// newLogger builds the one logger of the process (appliance.NewLogger): JSON lines
// for journald by default, text when QUEEN_LOG_FORMAT=text; with syslog priority
// prefixes when out is the journal. Its level is the returned LevelVar, so that a
// reload (SIGHUP, reload.go) can change it while the broker runs. Under
// QUEEN_INSTANCE every line carries the replica's name (instance).
func newLogger(cfg *config.Config, out io.Writer) (*slog.Logger, *slog.LevelVar) {
	logger, lv := appliance.NewLogger(out, cfg.LogFormat, cfg.SlogLevel())
	if cfg.Instance != "" {
		logger = logger.With("instance", cfg.Instance)
	}
	return logger, lv
}

// logBootRecord logs the start line, the effective configuration, its warnings and the
// unknown QUEEN_* variables, whatever LOG_LEVEL says: they record what this process runs
// with, which an operator who logs only warnings or errors needs as much as anyone.
// Nothing else logs yet, so lowering the level for these lines hides nothing else.
func logBootRecord(ctx context.Context, logger *slog.Logger, level *slog.LevelVar, cfg *config.Config) {
	want := level.Level()
	level.Set(min(want, slog.LevelInfo))
	defer level.Set(want)
	logger.Info("queen starting", "version", buildinfo.Version, "commit", buildinfo.Commit, "build_date", buildinfo.Date)
	logger.LogAttrs(ctx, slog.LevelInfo, "effective configuration", cfg.LogAttrs()...)
	for _, w := range cfg.Warnings() {
		logger.Warn("configuration warning", "warning", w)
	}
	logUnknownVariables(logger, cfg.UnknownVariables())
}

// logUnknownVariables warns, once each, about the QUEEN_* variables the configuration
// does not know: most likely typos that leave a default in force. They do not stop
// the broker (the environment is not all queen's: Kubernetes, shells and wrappers add
// their own), so the warning is the only trace they leave.
func logUnknownVariables(logger *slog.Logger, unknown []config.UnknownVariable) {
	for _, u := range unknown {
		attrs := []any{"variable", u.Name}
		if u.Hint != "" {
			attrs = append(attrs, "did_you_mean", u.Hint)
		}
		if u.LinkShaped {
			attrs = append(attrs, "note", "named like a Kubernetes service-link variable, but its value is not one")
		}
		logger.Warn("unknown QUEEN_* variable ignored; a typo leaves the default in force", attrs...)
	}
}
