package cli

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/queenmq/queen/internal/api"
)

// messagesCommand is `queenctl messages`.
func messagesCommand() *command {
	return &command{
		name: "messages", aliases: []string{"message", "msg"}, summary: "browse, show and delete messages",
		subs: []*command{
			{
				name: "list", aliases: []string{"ls"}, summary: "list messages, newest first (default: created in the last hour)",
				setup: func(fs *flag.FlagSet) runFunc {
					var o struct{ queue, partition, namespace, task, status, from, to string }
					fs.StringVar(&o.queue, "queue", "", "only this queue")
					fs.StringVar(&o.partition, "partition", "", "only this partition (name)")
					alias(fs, "p", "partition")
					fs.StringVar(&o.namespace, "namespace", "", "only queues of this namespace")
					fs.StringVar(&o.task, "task", "", "only queues of this task")
					fs.StringVar(&o.status, "status", "", "pending, processing, completed or dead_letter")
					fs.StringVar(&o.from, "from", "", "created at or after (default 1h ago)")
					fs.StringVar(&o.to, "to", "", "created before (default now)")
					limit := fs.Int("limit", 200, "most messages (1-10000)")
					offset := fs.Int("offset", 0, "messages to skip")
					return func(ctx context.Context, a *app, _ []string) error {
						q := url.Values{"limit": {strconv.Itoa(*limit)}, "offset": {strconv.Itoa(*offset)}}
						for _, p := range [][2]string{{"queue", o.queue}, {"partition", o.partition}, {"ns", o.namespace},
							{"task", o.task}, {"status", o.status}} {
							setQuery(q, p[0], p[1])
						}
						for _, t := range [][2]string{{"from", o.from}, {"to", o.to}} {
							ts, err := timeFlag(t[0], t[1])
							if err != nil {
								return err
							}
							setQuery(q, t[0], ts)
						}
						var l api.MessageList
						if err := a.get(ctx, "/api/v1/messages", q, &l); err != nil {
							return fail(err, "list messages")
						}
						return a.show(l, func(t *tw) { showMessages(t, &l) })
					}
				},
			},
			{
				name: "get", aliases: []string{"show"}, args: "PARTITION_ID TRANSACTION_ID", minArgs: 2, maxArgs: 2,
				summary: "show one message with its payload and consumption state",
				setup: func(*flag.FlagSet) runFunc {
					return func(ctx context.Context, a *app, args []string) error {
						var d api.MessageDetail
						if err := a.get(ctx, messagePath(args[0], args[1]), nil, &d); err != nil {
							return fail(err, "message %s", args[1])
						}
						return a.show(d, func(t *tw) { showMessage(t, &d) })
					}
				},
			},
			{
				name: "delete", aliases: []string{"rm"}, args: "PARTITION_ID TRANSACTION_ID", minArgs: 2, maxArgs: 2,
				summary: "delete one message (its dead-letter entries and traces go with it)",
				setup: func(*flag.FlagSet) runFunc {
					return func(ctx context.Context, a *app, args []string) error {
						var r api.MessageDeleteResponse
						if err := a.call(ctx, http.MethodDelete, messagePath(args[0], args[1]), nil, nil, &r); err != nil {
							return fail(err, "delete message %s", args[1])
						}
						if err := a.show(r, func(t *tw) {
							if r.Success {
								t.line("Deleted message %s.", args[1])
							}
						}); err != nil {
							return err
						}
						if !r.Success {
							return fail(outcomeError("%s", r.Message), "delete message %s", args[1])
						}
						return nil
					}
				},
			},
		},
	}
}

// showMessages renders a message page.
func showMessages(t *tw, l *api.MessageList) {
	rows := make([][]string, len(l.Messages))
	for i, m := range l.Messages {
		rows[i] = []string{m.CreatedAt, m.QueuePath, m.PartitionID, m.TransactionID, t.state(m.Status),
			fmt.Sprintf("%d/%d", m.BusStatus.ConsumedBy, m.BusStatus.TotalGroups)}
	}
	t.table([]string{"CREATED", "QUEUE/PARTITION", "PARTITION ID", "TRANSACTION ID", "STATUS", "CONSUMED BY"}, rows, "No messages.")
	if int64(len(l.Messages)) < l.Total {
		t.line("")
		t.line("Showing %d from offset %d of %d messages.", len(l.Messages), l.Pagination.Offset, l.Total)
	}
}

// showMessage renders one message.
func showMessage(t *tw, d *api.MessageDetail) {
	pairs := [][2]string{
		{"Message", d.ID},
		{"Transaction", d.TransactionID},
		{"Queue", d.QueuePath},
		{"Partition ID", d.PartitionID},
		{"Status", t.state(d.Status)},
		{"Created", d.CreatedAt},
		{"Trace", deref(d.TraceID)},
		{"Producer", deref(d.ProducerSub)},
		{"Encrypted", yesNo(d.IsEncrypted)},
	}
	if d.ErrorMessage != nil {
		retries := "-"
		if d.RetryCount != nil {
			retries = itoa(*d.RetryCount)
		}
		pairs = append(pairs, [2]string{"Error", t.red(*d.ErrorMessage) + " (after " + retries + " retries)"})
	}
	var groups []string
	for _, g := range d.ConsumerGroups {
		s := "pending"
		if g.Consumed {
			s = "consumed"
		} else if g.LeaseExpiresAt != nil {
			s = "leased until " + *g.LeaseExpiresAt
		}
		groups = append(groups, g.Name+" "+s)
	}
	pairs = append(pairs, [2]string{"Groups", orDash(strings.Join(groups, ", "))})
	t.kv(pairs)
	t.line("%s", t.bold("Payload:"))
	t.line("  %s", indentJSON(d.Payload, "  "))
}

// tracesCommand is `queenctl traces`.
func tracesCommand() *command {
	return &command{
		name: "traces", aliases: []string{"trace"}, summary: "read the trace events recorded on messages",
		subs: []*command{
			{
				name: "get", aliases: []string{"show"}, args: "PARTITION_ID TRANSACTION_ID", minArgs: 2, maxArgs: 2,
				summary: "the trace events of one message, oldest first",
				setup: func(*flag.FlagSet) runFunc {
					return func(ctx context.Context, a *app, args []string) error {
						var l api.TraceList
						if err := a.get(ctx, "/api/v1/traces/"+url.PathEscape(args[0])+"/"+url.PathEscape(args[1]), nil, &l); err != nil {
							return fail(err, "traces of %s", args[1])
						}
						return a.show(l, func(t *tw) {
							rows := make([][]string, len(l.Traces))
							for i, x := range l.Traces {
								rows[i] = []string{x.CreatedAt, x.EventType, x.ConsumerGroup, strings.Join(x.TraceNames, ","),
									truncate(compactJSON(x.Data), 60)}
							}
							t.table([]string{"CREATED", "EVENT", "GROUP", "NAMES", "DATA"}, rows, "No traces.")
						})
					}
				},
			},
			{
				name: "by-name", args: "NAME", minArgs: 1, maxArgs: 1, summary: "the trace events carrying a name, oldest first",
				setup: func(fs *flag.FlagSet) runFunc {
					limit := fs.Int("limit", 100, "most events (1-1000)")
					offset := fs.Int("offset", 0, "events to skip")
					return func(ctx context.Context, a *app, args []string) error {
						var l api.TraceByNameList
						q := url.Values{"limit": {strconv.Itoa(*limit)}, "offset": {strconv.Itoa(*offset)}}
						if err := a.get(ctx, "/api/v1/traces/by-name/"+url.PathEscape(args[0]), q, &l); err != nil {
							return fail(err, "traces named %q", args[0])
						}
						return a.show(l, func(t *tw) {
							rows := make([][]string, len(l.Traces))
							for i, x := range l.Traces {
								rows[i] = []string{x.CreatedAt, x.QueueName + "/" + x.PartitionName, x.TransactionID, x.EventType,
									truncate(compactJSON(x.Data), 60)}
							}
							t.table([]string{"CREATED", "QUEUE/PARTITION", "TRANSACTION ID", "EVENT", "DATA"}, rows, "No traces.")
						})
					}
				},
			},
			{
				name: "names", summary: "the trace names in use, most recently seen first",
				setup: func(fs *flag.FlagSet) runFunc {
					limit := fs.Int("limit", 50, "most names (1-1000)")
					offset := fs.Int("offset", 0, "names to skip")
					return func(ctx context.Context, a *app, _ []string) error {
						var l api.TraceNameList
						q := url.Values{"limit": {strconv.Itoa(*limit)}, "offset": {strconv.Itoa(*offset)}}
						if err := a.get(ctx, "/api/v1/traces/names", q, &l); err != nil {
							return fail(err, "trace names")
						}
						return a.show(l, func(t *tw) {
							rows := make([][]string, len(l.TraceNames))
							for i, x := range l.TraceNames {
								rows[i] = []string{x.TraceName, itoa(x.TraceCount), itoa(x.MessageCount), x.LastSeen}
							}
							t.table([]string{"NAME", "EVENTS", "MESSAGES", "LAST SEEN"}, rows, "No trace names.")
						})
					}
				},
			},
		},
	}
}
