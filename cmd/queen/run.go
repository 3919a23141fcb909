package main

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/daemon"
)

// serve hands a loaded configuration to the composition root and blocks until the
// broker has stopped: after ctx is cancelled (SIGINT, SIGTERM) and the staged drain is
// done, or on a fatal error. Each SIGHUP on hups is a reload request.
func serve(ctx context.Context, cfg *config.Config, stdout io.Writer, hups <-chan os.Signal) error {
	return daemon.Run(ctx, cfg, daemon.Options{Stdout: stdout, Reload: hups})
}

// isConfigError reports whether serve failed because of the configuration (exit 78)
// rather than at run time (exit 1).
func isConfigError(err error) bool {
	return errors.Is(err, config.ErrInvalid) || errors.Is(err, daemon.ErrUnsupportedConfig)
}
