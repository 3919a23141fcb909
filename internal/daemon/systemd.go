package daemon

// The broker's side of running under systemd (docs/systemd.md): the listener from
// socket activation, and status lines while waiting for PostgreSQL. The generic parts
// (the listeners, the notifier, the watchdog) are internal/appliance's. Everything
// here also works without systemd: no passed sockets means bind HOST:PORT, no
// NOTIFY_SOCKET means the notifier does nothing.

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/appliance"
	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/sdnotify"
)

// sourceActivation begins the listener source of sockets passed by systemd.
const sourceActivation = "systemd socket activation"

// listen returns the listener to serve: the sockets systemd passed (queen.socket,
// LISTEN_FDS), merged into one, or else HOST:PORT bound here (appliance.Listen). It
// reports which, for the log.
func listen(cfg *config.Config) (ln net.Listener, source string, err error) {
	ln, passed, err := appliance.Listen(net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, "", fmt.Errorf("daemon: %w", err)
	}
	if passed == "" {
		return ln, "bound HOST:PORT", nil
	}
	return ln, sourceActivation + " (" + passed + "); HOST and PORT are ignored", nil
}

// warnIgnoredAddress warns when HOST or PORT was set (not left at its default) but the
// listener came from systemd: the socket unit's ListenStream= decides the address, and
// a HOST=127.0.0.1 meant to keep the broker off the network does not.
func warnIgnoredAddress(cfg *config.Config, source string, logger *slog.Logger) {
	if !strings.HasPrefix(source, sourceActivation) {
		return
	}
	var set []string
	for _, name := range []string{"HOST", "PORT"} {
		if cfg.Source(name) != config.SourceDefault {
			set = append(set, name)
		}
	}
	if len(set) > 0 {
		logger.Warn("HOST and PORT are ignored: the listening socket comes from systemd (the socket unit's "+
			"ListenStream= sets the address)", "set", set, "source", source)
	}
}

// pgTarget names the database for status lines, without credentials.
func pgTarget(cfg *config.Config) string {
	return fmt.Sprintf("%s database %s", cfg.PGServers(), cfg.PGDB)
}

// reportWaiting tells systemd, after a failed attempt to reach PostgreSQL, what the
// start-up waits for, and extends the start timeout past the next attempt: while
// queen makes attempts it is making progress, so it waits for PostgreSQL as long as
// it takes (TimeoutStartSec= only fires if queen stops reporting, i.e. hangs).
// Clients meanwhile queue in the socket's backlog.
func reportWaiting(n *sdnotify.Notifier, cfg *config.Config, attempt int, retryIn time.Duration, err error, logger *slog.Logger) {
	msg := err.Error()
	if hint := pgConnectHint(err); hint != "" {
		msg = hint // pgx's text puts the cause last, past the cut
	}
	if len(msg) > 160 {
		msg = msg[:160] + "…"
	}
	status := fmt.Sprintf("waiting for PostgreSQL at %s (attempt %d, next in %s): %s",
		pgTarget(cfg), attempt, retryIn, msg)
	appliance.NotifyWarn(logger, "EXTEND_TIMEOUT_USEC", n.ExtendTimeout(retryIn+cfg.ConnectTimeout()+startMargin, status))
}

// startMargin is how much longer than the next attempt needs a start-timeout
// extension lasts: room for one schema apply.
const startMargin = 30 * time.Second
