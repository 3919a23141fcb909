package daemon

import (
	"runtime/debug"

	"github.com/queenmq/queen/internal/config"
)

// applyGC hands GOGC and GOMEMLIMIT to the garbage collector. The runtime read both
// variables itself at start; the configuration holds the same values, or queen's
// defaults for those unset (docs/configuration.md). A zero field, from a Config not
// made by config.Load, leaves the runtime's own setting.
func applyGC(cfg *config.Config) {
	if cfg.GCPercent != 0 {
		debug.SetGCPercent(cfg.GCPercent)
	}
	if cfg.MemoryLimit != 0 {
		debug.SetMemoryLimit(cfg.MemoryLimit)
	}
}
