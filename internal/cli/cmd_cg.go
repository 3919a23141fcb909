package cli

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/queenmq/queen/internal/api"
)

// beginning is the timestamp that means "replay everything" (upstream queenctl's).
const beginning = "1970-01-01T00:00:00Z"

// cgCommand is `queenctl cg`.
func cgCommand() *command {
	return &command{
		name: "cg", aliases: []string{"consumer-groups", "group", "groups"},
		summary: "inspect consumer groups, their lag, and move their cursors",
		subs: []*command{
			{
				name: "list", aliases: []string{"ls"}, summary: "list consumer groups per queue with their lag",
				setup: func(fs *flag.FlagSet) runFunc {
					queue := fs.String("queue", "", "only groups on this queue")
					return func(ctx context.Context, a *app, _ []string) error {
						var l []api.ConsumerGroupSummary
						if err := a.get(ctx, "/api/v1/consumer-groups", nil, &l); err != nil {
							return fail(err, "list consumer groups")
						}
						if *queue != "" {
							l = slices.DeleteFunc(l, func(g api.ConsumerGroupSummary) bool { return g.QueueName != *queue })
						}
						if l == nil {
							l = []api.ConsumerGroupSummary{}
						}
						return a.show(l, func(t *tw) { showGroups(t, l) })
					}
				},
			},
			{
				name: "get", aliases: []string{"describe", "show"}, args: "GROUP", minArgs: 1, maxArgs: 1,
				summary: "show a group's cursor, lag and lease on every partition",
				setup: func(*flag.FlagSet) runFunc {
					return func(ctx context.Context, a *app, args []string) error {
						d, err := a.group(ctx, args[0])
						if err != nil {
							return err
						}
						return a.show(d, func(t *tw) { showGroup(t, d) })
					}
				},
			},
			{
				name: "lag", args: "[GROUP]", maxArgs: 1, summary: "list partitions whose oldest unconsumed message is older than --min-lag",
				setup: func(fs *flag.FlagSet) runFunc {
					minLag := 0
					unitVar(fs, &minLag, "min-lag", time.Second, "lag threshold, seconds or a duration (default 0: any lag)")
					return func(ctx context.Context, a *app, args []string) error {
						var l []api.LaggingPartition
						q := url.Values{"minLagSeconds": {strconv.Itoa(minLag)}}
						if err := a.get(ctx, "/api/v1/consumer-groups/lagging", q, &l); err != nil {
							return fail(err, "lagging partitions")
						}
						if len(args) == 1 {
							l = slices.DeleteFunc(l, func(p api.LaggingPartition) bool { return p.ConsumerGroup != args[0] })
						}
						if l == nil {
							l = []api.LaggingPartition{}
						}
						return a.show(l, func(t *tw) { showLagging(t, l) })
					}
				},
			},
			cgSeekCommand(),
			cgReplayCommand(),
			{
				name: "delete", aliases: []string{"rm"}, args: "GROUP", minArgs: 1, maxArgs: 1,
				summary: "delete a group's cursors (on one queue with --queue) so that it starts over",
				setup: func(fs *flag.FlagSet) runFunc {
					queue := fs.String("queue", "", "only on this queue")
					keep := fs.Bool("keep-subscription", false, "keep the group's subscription (where a new cursor starts)")
					yes := fs.Bool("yes", false, "do not ask for confirmation")
					alias(fs, "y", "yes")
					return func(ctx context.Context, a *app, args []string) error {
						return runGroupDelete(ctx, a, args[0], *queue, *keep, *yes)
					}
				},
			},
		},
	}
}

// group fetches one consumer group.
func (a *app) group(ctx context.Context, name string) (api.ConsumerGroupDetail, error) {
	d := api.ConsumerGroupDetail{}
	if err := a.get(ctx, "/api/v1/consumer-groups/"+url.PathEscape(name), nil, &d); err != nil {
		return nil, fail(err, "consumer group %q", name)
	}
	if len(d) == 0 { // the broker answers an unknown group with {}, as upstream
		return nil, &codeError{code: ExitNotFound,
			msg: fmt.Sprintf("consumer group %q: not found (no cursor or subscription on any queue)", name)}
	}
	return d, nil
}

// showGroups renders the group list.
func showGroups(t *tw, l []api.ConsumerGroupSummary) {
	rows := make([][]string, len(l))
	for i, g := range l {
		sub := deref(g.SubscriptionMode)
		if g.SubscriptionTimestamp != nil {
			sub += " " + *g.SubscriptionTimestamp
		}
		rows[i] = []string{g.Name, g.QueueName, itoa(g.Members), itoa(g.PartitionsWithLag), itoa(g.TotalLag),
			itoa(g.InFlight), ago(g.MaxTimeLag), t.state(g.State), delivery(g.Conflation), sub}
	}
	t.table([]string{"GROUP", "QUEUE", "PARTITIONS", "LAGGING", "LAG", "IN FLIGHT", "MAX TIME LAG", "STATE", "DELIVERY",
		"SUBSCRIPTION"}, rows, "No consumer groups.")
}

// delivery names a group's delivery on a queue: "last value" when its conflation
// policy is on (the newest message of each partition), else "every message".
func delivery(conflation bool) string {
	if conflation {
		return "last value"
	}
	return "every message"
}

// showGroupLags renders how far each consumer group is behind on its queue (a group
// whose conflation policy is on there marked "(last value)").
func showGroupLags(t *tw, l []api.ConsumerGroupLag) {
	rows := make([][]string, len(l))
	for i, g := range l {
		name := g.Group
		if g.Conflation {
			name += " (" + delivery(true) + ")"
		}
		rows[i] = []string{name, g.Queue, itoa(g.Lag), t.yellow(itoa(g.Pending)), itoa(g.InFlight),
			ago(int64(g.LagSeconds)), itoa(g.PartitionsWithLag)}
	}
	t.table([]string{"GROUP", "QUEUE", "LAG", "PENDING", "IN FLIGHT", "OLDEST", "LAGGING PARTITIONS"}, rows, "No consumer groups.")
}

// showGroup renders one group, its queues in name order (a queue where the group's
// conflation policy is on marked "(last value)").
func showGroup(t *tw, d api.ConsumerGroupDetail) {
	var rows [][]string
	queues := make([]string, 0, len(d))
	for q := range d {
		queues = append(queues, q)
	}
	slices.Sort(queues)
	for _, q := range queues {
		ps := d[q].Partitions
		name := q
		if d[q].Conflation {
			name += " (" + delivery(true) + ")"
		}
		if len(ps) == 0 {
			rows = append(rows, []string{name, "-", "-", "-", "-", "-", "-"})
		}
		for _, p := range ps {
			rows = append(rows, []string{name, p.Partition, itoa(p.TotalConsumed), itoa(p.OffsetLag), ago(p.TimeLagSeconds),
				deref(p.LastConsumedAt), yesNo(p.LeaseActive)})
		}
	}
	t.table([]string{"QUEUE", "PARTITION", "CONSUMED", "LAG", "TIME LAG", "LAST CONSUMED", "LEASED"}, rows, "No cursors.")
}

// showLagging renders lagging partitions.
func showLagging(t *tw, l []api.LaggingPartition) {
	rows := make([][]string, len(l))
	for i, p := range l {
		rows[i] = []string{p.ConsumerGroup, p.QueueName, p.PartitionName, itoa(p.OffsetLag), t.yellow(ago(p.TimeLagSeconds)),
			p.OldestUnconsumedAt, deref(p.LastConsumedAt)}
	}
	t.table([]string{"GROUP", "QUEUE", "PARTITION", "LAG", "TIME LAG", "OLDEST UNCONSUMED", "LAST CONSUMED"}, rows, "No lagging partitions.")
}

// cgSeekCommand is `queenctl cg seek`.
func cgSeekCommand() *command {
	return &command{
		name: "seek", args: "GROUP QUEUE", minArgs: 2, maxArgs: 2,
		summary: "move a group's cursors to the end, or to a time",
		help: "--to-end skips everything not yet consumed; --to TIME moves every cursor to the\n" +
			"newest message at or before TIME, so later messages are delivered (again).\n" +
			"With --partition only that partition moves (to its end).",
		setup: func(fs *flag.FlagSet) runFunc {
			toEnd := fs.Bool("to-end", false, "skip to the newest message")
			to := fs.String("to", "", "move to a time: RFC 3339, a date, a duration ago, or beginning")
			partition := fs.String("partition", "", "only this partition (always to its end)")
			alias(fs, "p", "partition")
			return func(ctx context.Context, a *app, args []string) error {
				group, queue := args[0], args[1]
				if *partition != "" {
					if *to != "" {
						return usagef("--partition seeks to the end only; drop --to")
					}
					return runPartitionSeek(ctx, a, group, queue, *partition)
				}
				if *toEnd == (*to != "") {
					return usagef("give exactly one of --to-end and --to")
				}
				req := api.SeekRequest{ToEnd: *toEnd}
				if *to != "" {
					ts, err := seekTime(*to)
					if err != nil {
						return err
					}
					req.Timestamp = ts
				}
				r, err := a.seek(ctx, group, queue, req)
				if err != nil {
					return err
				}
				return a.show(r, func(t *tw) {
					where := "the end"
					if !r.SeekToEnd {
						where = deref(r.TargetTimestamp)
					}
					t.line("Moved %d cursors of %s on %s to %s.", r.PartitionsUpdated, group, queue, where)
				})
			}
		},
	}
}

// seekTime converts --to / --from into the seek body's timestamp.
func seekTime(s string) (string, error) {
	if s == "beginning" || s == "start" {
		return beginning, nil
	}
	t, err := parseTime(s, time.Now())
	if err != nil {
		return "", usagef("%v", err)
	}
	return wireTime(t), nil
}

// seek calls the queue seek route.
func (a *app) seek(ctx context.Context, group, queue string, req api.SeekRequest) (*api.SeekResponse, error) {
	var r api.SeekResponse
	path := "/api/v1/consumer-groups/" + url.PathEscape(group) + "/queues/" + url.PathEscape(queue) + "/seek"
	if err := a.call(ctx, http.MethodPost, path, nil, req, &r); err != nil {
		return nil, fail(err, "seek %s on %s", group, queue)
	}
	return &r, nil
}

// runPartitionSeek moves one partition's cursor to its end.
func runPartitionSeek(ctx context.Context, a *app, group, queue, partition string) error {
	var r api.PartitionSeekResponse
	path := "/api/v1/consumer-groups/" + url.PathEscape(group) + "/queues/" + url.PathEscape(queue) +
		"/partitions/" + url.PathEscape(partition) + "/seek"
	if err := a.call(ctx, http.MethodPost, path, nil, struct{}{}, &r); err != nil {
		return fail(err, "seek %s on %s/%s", group, queue, partition)
	}
	return a.show(r, func(t *tw) {
		t.line("Moved the cursor of %s on %s/%s to its end (%s).", group, queue, partition, deref(r.CursorMovedTo))
	})
}

// runGroupDelete implements cg delete.
func runGroupDelete(ctx context.Context, a *app, group, queue string, keep, yes bool) error {
	scope := "on every queue"
	path := "/api/v1/consumer-groups/" + url.PathEscape(group)
	if queue != "" {
		scope = "on queue " + queue
		path += "/queues/" + url.PathEscape(queue)
	}
	if err := a.confirm(yes, "Delete the cursors of consumer group %q %s?", group, scope); err != nil {
		return err
	}
	q := url.Values{"deleteMetadata": {strconv.FormatBool(!keep)}}
	var r struct {
		Success           bool   `json:"success"`
		ConsumerGroup     string `json:"consumerGroup"`
		QueueName         string `json:"queueName,omitempty"`
		DeletedPartitions int    `json:"deletedPartitions"`
		MetadataDeleted   bool   `json:"metadataDeleted"`
	}
	if err := a.call(ctx, http.MethodDelete, path, q, nil, &r); err != nil {
		return fail(err, "delete consumer group %q", group)
	}
	return a.show(r, func(t *tw) {
		sub := "its subscription kept"
		if r.MetadataDeleted {
			sub = "its subscription deleted"
		}
		t.line("Deleted %d cursors of %s %s, %s.", r.DeletedPartitions, group, scope, sub)
	})
}

// cgReplayCommand is `queenctl cg replay`.
func cgReplayCommand() *command {
	return &command{
		name: "replay", args: "GROUP QUEUE", minArgs: 2, maxArgs: 2,
		summary: "re-deliver a queue's messages to a group from a time on",
		help: "Seeks the group's cursors back to --from (default: the beginning) and reports\n" +
			"how many messages the group now has to consume. With --wait it follows the\n" +
			"group's progress through them until it has caught up.",
		setup: func(fs *flag.FlagSet) runFunc {
			from := fs.String("from", "beginning", "replay messages created after this time")
			wait := fs.Bool("wait", false, "follow the replay until the group has caught up")
			alias(fs, "w", "wait")
			interval := fs.Duration("interval", time.Second, "how often --wait checks the group")
			return func(ctx context.Context, a *app, args []string) error {
				return runReplay(ctx, a, args[0], args[1], *from, *wait, *interval)
			}
		},
	}
}

// replayResult is the -o json/yaml shape of cg replay.
type replayResult struct {
	Seek *api.SeekResponse `json:"seek"`
	// Backlog is the group's unconsumed messages on the queue right after the seek.
	Backlog int64 `json:"backlog"`
	// Remaining is the backlog when the command ended (0 after a finished --wait).
	Remaining int64 `json:"remaining"`
}

// runReplay implements cg replay.
func runReplay(ctx context.Context, a *app, group, queue, from string, wait bool, interval time.Duration) error {
	ts, err := seekTime(from)
	if err != nil {
		return err
	}
	if interval <= 0 {
		return usagef("--interval must be positive")
	}
	r, err := a.seek(ctx, group, queue, api.SeekRequest{Timestamp: ts})
	if err != nil {
		return err
	}
	res := replayResult{Seek: r}
	if res.Backlog, err = a.backlog(ctx, group, queue); err != nil {
		return err
	}
	res.Remaining = res.Backlog
	if wait {
		prog := a.progress()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for res.Remaining > 0 {
			done := res.Backlog - res.Remaining
			prog.update("replay %s on %s: %d/%d messages consumed (%.0f%%)", group, queue, done, res.Backlog,
				100*float64(done)/float64(max(res.Backlog, 1)))
			select {
			case <-ctx.Done():
				prog.clear()
				return ctx.Err()
			case <-tick.C:
			}
			if res.Remaining, err = a.backlog(ctx, group, queue); err != nil {
				prog.clear()
				return err
			}
		}
		prog.done("replay %s on %s: %d messages consumed", group, queue, res.Backlog)
	}
	return a.show(res, func(t *tw) {
		t.line("Moved %d cursors of %s on %s to %s: %d messages to consume.", r.PartitionsUpdated, group, queue,
			deref(r.TargetTimestamp), res.Backlog)
		if wait {
			t.line("Replay done: the group has caught up.")
		}
	})
}

// backlog sums the group's unconsumed messages on queue.
func (a *app) backlog(ctx context.Context, group, queue string) (int64, error) {
	d, err := a.group(ctx, group)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, p := range d[queue].Partitions {
		n += p.OffsetLag
	}
	return n, nil
}
