package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// tailOptions are the flags of tail.
type tailOptions struct {
	popFlags
	from   string
	count  int
	follow bool
	poll   time.Duration
}

// tailCommand is `queenctl tail`.
func tailCommand() *command {
	return &command{
		name: "tail", args: "QUEUE", minArgs: 1, maxArgs: 1,
		summary: "follow a queue's messages as they arrive, like tail -f",
		help: "Reads the queue as a consumer group of its own, created for this run and\n" +
			"deleted at the end, with auto-ack: other consumers are not disturbed. --from\n" +
			"picks where it starts: now (only new messages), beginning, or a time.\n" +
			"With --group G it reads (and acknowledges!) as the existing group G instead.\n\n" +
			"Each message is a line: created-at, queue/partition, transaction id, payload;\n" +
			"-o json prints one JSON object per line. Stops on Ctrl-C (exit 0), after\n" +
			"--count messages, or, with --follow=false, once it has caught up.",
		setup: func(fs *flag.FlagSet) runFunc {
			var o tailOptions
			o.popFlags.register(fs, 100)
			fs.Lookup("group").Usage = "read (and acknowledge) as this existing consumer group " +
				"(default: a group of its own, queenctl-tail-<hex>, deleted at the end)"
			fs.StringVar(&o.from, "from", "now", "where to start: now, beginning, or a time (RFC 3339, date, duration ago)")
			fs.IntVar(&o.count, "count", 0, "stop after this many messages (0: no limit)")
			fs.BoolVar(&o.follow, "follow", true, "keep waiting for new messages; false stops once caught up")
			alias(fs, "f", "follow")
			fs.DurationVar(&o.poll, "poll", 10*time.Second, "long-poll timeout of each request")
			return func(ctx context.Context, a *app, args []string) error { return runTail(ctx, a, args[0], &o) }
		},
	}
}

// runTail implements tail.
func runTail(ctx context.Context, a *app, queue string, o *tailOptions) error {
	if o.batch < 1 || o.count < 0 || o.poll <= 0 {
		return usagef("--batch must be at least 1, --count at least 0 and --poll positive")
	}
	opt, err := o.popOptions(queue)
	if err != nil {
		return err
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	subscribed := false // whether a pop may have created the group
	if opt.ConsumerGroup == "" {
		opt.ConsumerGroup = "queenctl-tail-" + randomHex(4)
		defer func() {
			if subscribed {
				a.dropGroup(opt.ConsumerGroup, queue)
			}
		}()
	}
	prog := a.progress()
	seen := 0
	for o.count == 0 || seen < o.count {
		prog.update("tail %s as %s: %d messages, waiting for more (Ctrl-C to stop)", queue, opt.ConsumerGroup, seen)
		opt.Batch = o.batch
		if o.count > 0 {
			opt.Batch = min(o.batch, o.count-seen)
		}
		r, err := c.Pop(ctx, opt)
		// A pop the broker received may have subscribed the group, even when
		// Ctrl-C cut it short; only a pop that never got through did not.
		subscribed = subscribed || ctx.Err() != nil || !isUnreachable(err)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			prog.clear()
			return fail(err, "tail %s", queue)
		}
		if len(r.Messages) == 0 && !o.follow {
			break
		}
		prog.clear()
		for _, m := range r.Messages {
			if m.Queue == "" {
				m.Queue = queue
			}
			if err := a.tailLine(&m); err != nil {
				return err
			}
		}
		seen += len(r.Messages)
	}
	prog.done("tail %s: %d messages", queue, seen)
	return nil
}

// popOptions builds tail's pops: auto-acked, long-polling when following, and
// subscribed from --from.
func (o *tailOptions) popOptions(queue string) (client.PopOptions, error) {
	opt := client.PopOptions{Queue: queue, Partition: o.partition, ConsumerGroup: o.group, Batch: o.batch,
		Wait: o.follow, Timeout: o.poll, AutoAck: true}
	switch o.from {
	case "now":
		opt.SubscriptionMode = api.SubscriptionModeNew
	case "beginning", "start":
		opt.SubscriptionFrom = "1970-01-01T00:00:00.000Z"
	default:
		t, err := parseTime(o.from, time.Now())
		if err != nil {
			return opt, usagef("--from: %v", err)
		}
		opt.SubscriptionFrom = wireTime(t)
	}
	return opt, nil
}

// tailLine prints one message as it arrives.
func (a *app) tailLine(m *api.Message) error {
	switch a.g.output {
	case formatJSON:
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "%s\n", b)
		return err
	case formatYAML:
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		y, err := jsonToYAML(b)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "---\n%s", y)
		return err
	}
	t := a.tw()
	t.line("%s %s %s %s", t.dim(m.CreatedAt), t.cyan(m.Queue+"/"+m.Partition), m.TransactionID, compactJSON(m.Data))
	return nil
}

// dropGroup deletes tail's own consumer group on the queue, even after Ctrl-C.
func (a *app) dropGroup(group, queue string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	path := "/api/v1/consumer-groups/" + url.PathEscape(group) + "/queues/" + url.PathEscape(queue)
	if err := a.call(ctx, http.MethodDelete, path, url.Values{"deleteMetadata": {"true"}}, nil, nil); err != nil {
		fmt.Fprintf(a.stderr, "queenctl tail: could not delete its consumer group %s: %s\n", group, describe(err, a.target))
	}
}

// randomHex returns 2n random hex digits.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails since Go 1.24
	return hex.EncodeToString(b)
}
