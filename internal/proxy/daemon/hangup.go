package daemon

import (
	"context"
	"os"
)

// hangup answers SIGHUP. The proxy reads its settings only at start (a running
// process's environment cannot change), so there is nothing to reload: it says so,
// rather than dying of the signal's default action.
func (p *proxy) hangup(_ context.Context, sig os.Signal) {
	p.logger.Warn("received SIGHUP: queen-proxy reloads nothing; restart it to apply changed settings",
		"component", "reload", "signal", sig.String())
}
