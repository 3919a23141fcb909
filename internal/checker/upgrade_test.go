package checker_test

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/checker"
)

// TestUpgradeUnderTraffic's settings: it runs only when given the brokers, as
// scripts/systemd-test/upgrade.sh does inside a disposable systemd where queen was
// installed from its repository (make test-upgrade).
var (
	flagUpgradeURLs  = flag.String("checker.upgrade-urls", "", "upgrade: comma-separated base URLs of the installed brokers (empty: skip TestUpgradeUnderTraffic)")
	flagUpgradeCmd   = flag.String("checker.upgrade-cmd", "", "upgrade: the shell command that upgrades (or downgrades) the package under traffic")
	flagUpgradeName  = flag.String("checker.upgrade-name", "upgrade", "upgrade: the step's name in the report")
	flagUpgradeQueue = flag.String("checker.upgrade-queue", "upgrade", "upgrade: the queue the run uses (must not exist)")
	flagUpgradeAt    = flag.Duration("checker.upgrade-at", 6*time.Second, "upgrade: when the command runs, from the start of the traffic")
)

// installed is brokers that a package manager runs: the run only reads their URLs
// (one per client; several may name one socket shared by replicas). Restarts are
// the package's, through the upgrade command.
type installed []string

func (c installed) URLs() []string { return c }

func (installed) Restart(context.Context, int) error {
	return errors.New("installed brokers are restarted by their package, not by the checker")
}

func (c installed) RestartGraceful(ctx context.Context, i int) error { return c.Restart(ctx, i) }

// upgradeConfig is TestUpgradeUnderTraffic's run: a few thousand messages over 45 s,
// the package command at 6 s (apt-get takes 5 to 20 s on two busy cores), so that
// traffic runs before, during and after it.
func upgradeConfig(brokers int) checker.Config {
	c := checker.DefaultConfig()
	c.Queue = *flagUpgradeQueue
	c.Producers = 4
	c.Messages = 4500
	c.Duration = 45 * time.Second
	c.ConsumersPerGroup = 2 * brokers
	c.Restarts = 0
	return withFlags(c)
}

// TestUpgradeUnderTraffic runs the concurrency checker against brokers installed
// from the package repository while -checker.upgrade-cmd (apt-get upgrade, or a
// downgrade) replaces the package and restarts them, and requires what the upgrade
// documentation promises: no message lost, none duplicated beyond what leases allow,
// per-partition order kept, no 5xx other than 503, and pushes queued again once the
// command is done. It prints how the clients saw the restart: requests refused (503
// or no answer), the longest push and ack, the longest pop beyond its long-poll
// wait, and the longest time no push was answered.
func TestUpgradeUnderTraffic(t *testing.T) {
	if *flagUpgradeURLs == "" {
		t.Skip("no installed brokers given (-checker.upgrade-urls); make test-upgrade runs this in a disposable systemd")
	}
	require.NotEmpty(t, *flagUpgradeCmd, "-checker.upgrade-cmd")
	urls := installed(strings.Split(*flagUpgradeURLs, ","))
	cfg := upgradeConfig(len(urls))
	cfg.Faults = []checker.Fault{{At: *flagUpgradeAt, Name: *flagUpgradeName, Do: func(ctx context.Context) error {
		cmd := exec.CommandContext(ctx, "sh", "-c", *flagUpgradeCmd)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		return cmd.Run()
	}}}
	rep := runChecker(t, cfg, urls)

	require.Equal(t, cfg.Messages, rep.Pushed, "every message was pushed")
	require.Len(t, rep.FaultLog, 1)
	f := rep.FaultLog[0]
	t.Logf("checker: %s", f)
	require.True(t, f.Recovered, "pushes queued again after %s: %s", f.Name, f)
	t.Logf("upgrade: %s", restartSeen(rep.History, f.Start, cfg.PopWait))
}

// restartSeen sums up the requests answered from the start of the package command
// on: how many were refused, and the longest wait a client had.
func restartSeen(h *checker.History, from, popWait time.Duration) string {
	var refused503, refusedNoAnswer, pushes int
	var longestPush, longestAck, longestPopExtra, pushGap time.Duration
	lastPush := from
	for _, q := range h.Requests {
		if q.Received < from {
			continue
		}
		took := q.Received - q.Sent
		switch q.Status {
		case http.StatusServiceUnavailable:
			refused503++
		case 0:
			refusedNoAnswer++
		}
		switch q.Route {
		case checker.RoutePush:
			pushes++
			longestPush = max(longestPush, took)
		case checker.RoutePop:
			longestPopExtra = max(longestPopExtra, took-popWait)
		default:
			longestAck = max(longestAck, took)
		}
	}
	// The longest stretch without a push answered with every item stored, counted
	// from the command's start: answers in order of arrival.
	byArrival := slices.Clone(h.Requests)
	slices.SortFunc(byArrival, func(a, b checker.Request) int { return cmp.Compare(a.Received, b.Received) })
	for _, q := range byArrival {
		if q.Route != checker.RoutePush || q.Received < from || q.Status != http.StatusOK || q.Queued != q.Items {
			continue
		}
		pushGap = max(pushGap, q.Received-lastPush)
		lastPush = q.Received
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }
	return fmt.Sprintf("requests refused: %d answered 503, %d without an answer; longest push %s, longest ack or transaction %s, "+
		"longest pop beyond its %s wait %s; longest time without a push stored %s (%d pushes after the command started)",
		refused503, refusedNoAnswer, ms(longestPush), ms(longestAck), popWait, ms(max(longestPopExtra, 0)), ms(pushGap), pushes)
}
