// Package sdnotify tells the service manager what the daemon is doing, over the
// sd_notify(3) protocol: readiness, a one-line status, extensions of the start
// timeout, the start of a graceful stop, and watchdog keep-alives.
//
// The datagrams go to $NOTIFY_SOCKET through github.com/coreos/go-systemd/v22/daemon,
// which also reads WATCHDOG_USEC and WATCHDOG_PID. Outside a Type=notify unit (make
// run, containers, tests) the socket is unset and every method does nothing, so the
// daemon behaves the same with or without systemd. A nil *Notifier also does nothing.
package sdnotify

import (
	"fmt"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Notifier sends state changes to the service manager. It is safe for concurrent
// use: every call is one datagram on a fresh connection.
type Notifier struct {
	watchdog time.Duration
}

// New returns the notifier of this process. The watchdog interval is read once, here:
// it is WATCHDOG_USEC when WATCHDOG_PID is unset or names this process, else 0. A
// malformed WATCHDOG_USEC is reported and leaves the watchdog off.
func New() (*Notifier, error) {
	d, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		return &Notifier{}, fmt.Errorf("sdnotify: %w", err)
	}
	return &Notifier{watchdog: d}, nil
}

// WatchdogInterval is the service's WatchdogSec= (0 when the watchdog is off). A
// keep-alive must arrive within every such interval; send one every third of it.
func (n *Notifier) WatchdogInterval() time.Duration {
	if n == nil {
		return 0
	}
	return n.watchdog
}

// Ready reports that start-up is complete (READY=1), with status as the new status
// line. systemd then considers a Type=notify unit started.
func (n *Notifier) Ready(status string) error {
	return n.send("READY=1", statusLine(status))
}

// Status sets the free-text status shown by `systemctl status` (STATUS=).
func (n *Notifier) Status(status string) error {
	return n.send(statusLine(status))
}

// ExtendTimeout asks for d more time before the start (or stop) timeout fires, counted
// from now (EXTEND_TIMEOUT_USEC=), with status as the new status line. Send it while
// making progress; it cannot shorten a timeout.
func (n *Notifier) ExtendTimeout(d time.Duration, status string) error {
	return n.send(fmt.Sprintf("EXTEND_TIMEOUT_USEC=%d", d.Microseconds()), statusLine(status))
}

// Stopping reports that a graceful stop has begun (STOPPING=1).
func (n *Notifier) Stopping(status string) error {
	return n.send("STOPPING=1", statusLine(status))
}

// Watchdog sends one keep-alive (WATCHDOG=1). Call it only when the process has shown
// it is making progress: a keep-alive from a goroutine that checks nothing would keep
// a wedged daemon alive.
func (n *Notifier) Watchdog() error {
	if n.WatchdogInterval() == 0 {
		return nil
	}
	return n.send("WATCHDOG=1")
}

// send writes the assignments as one datagram; empty ones are dropped.
func (n *Notifier) send(assignments ...string) error {
	if n == nil {
		return nil
	}
	lines := make([]string, 0, len(assignments))
	for _, a := range assignments {
		if a != "" {
			lines = append(lines, a)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	if _, err := daemon.SdNotify(false, strings.Join(lines, "\n")); err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	return nil
}

// statusLine renders STATUS=; the protocol is line-based, so newlines become spaces.
func statusLine(s string) string {
	if s == "" {
		return ""
	}
	return "STATUS=" + strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}
