package appliance

import (
	"context"
	"log/slog"
	"os"

	"github.com/queenmq/queen/internal/sdnotify"
)

// NewNotifier returns given, or when it is nil the notifier of this process (a no-op
// outside a Type=notify unit). A malformed WATCHDOG_USEC is logged and turns the
// watchdog off rather than stopping the daemon.
func NewNotifier(given *sdnotify.Notifier, logger *slog.Logger) *sdnotify.Notifier {
	if given != nil {
		return given
	}
	n, err := sdnotify.New()
	if err != nil {
		logger.Warn("systemd watchdog disabled", "err", err)
	}
	return n
}

// NotifyWarn logs a failed notification at Warn: under systemd a lost READY=1 or
// keep-alive means the unit will be killed, and the log is the only trace of why
// (e.g. RestrictAddressFamilies= without AF_UNIX).
func NotifyWarn(logger *slog.Logger, what string, err error) {
	if err != nil {
		logger.Warn("could not notify systemd", "message", what, "err", err)
	}
}

// RunSignals calls handle with each signal from sigs (SIGHUP) until ctx is done or
// sigs is closed; it has the shape of a component. A nil sigs returns at once.
func RunSignals(ctx context.Context, sigs <-chan os.Signal, handle func(context.Context, os.Signal)) error {
	if sigs == nil {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case sig, ok := <-sigs:
			if !ok {
				return nil
			}
			handle(ctx, sig)
		}
	}
}
