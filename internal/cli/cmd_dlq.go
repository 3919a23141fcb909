package cli

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/queenmq/queen/internal/api"
)

// dlqFilter are the filters of the DLQ listing.
type dlqFilter struct {
	queue, group, partition, from, to string
}

// register adds the filter flags to fs.
func (f *dlqFilter) register(fs *flag.FlagSet) {
	fs.StringVar(&f.queue, "queue", "", "only this queue")
	fs.StringVar(&f.group, "group", "", "only entries of this consumer group")
	alias(fs, "g", "group")
	fs.StringVar(&f.partition, "partition", "", "only this partition (name)")
	fs.StringVar(&f.from, "from", "", "failed at or after this time")
	fs.StringVar(&f.to, "to", "", "failed at or before this time")
}

// query builds the listing's query string.
func (f *dlqFilter) query(limit, offset int) (url.Values, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}, "offset": {strconv.Itoa(offset)}}
	setQuery(q, "queue", f.queue)
	setQuery(q, "consumerGroup", f.group)
	setQuery(q, "partition", f.partition)
	for _, t := range []struct{ name, v string }{{"from", f.from}, {"to", f.to}} {
		ts, err := timeFlag(t.name, t.v)
		if err != nil {
			return nil, err
		}
		setQuery(q, t.name, ts)
	}
	return q, nil
}

// dlqCommand is `queenctl dlq`.
func dlqCommand() *command {
	return &command{
		name: "dlq", summary: "list, retry or delete dead-lettered messages",
		help: "'dlq retry' pushes the dead-lettered payload again to its queue and partition,\n" +
			"as a new message whose transaction id is dlq-retry-<old message id> (so running\n" +
			"it twice stores it once), then deletes the old message, with routes every broker\n" +
			"serves. The new message goes to every consumer group of the queue. queen's broker\n" +
			"can also requeue server-side in one transaction (POST /api/v1/dlq/requeue).",
		subs: []*command{
			{
				name: "list", aliases: []string{"ls"}, summary: "list dead-lettered messages, newest failure first",
				setup: func(fs *flag.FlagSet) runFunc {
					var f dlqFilter
					f.register(fs)
					limit := fs.Int("limit", 100, "most entries (1-1000)")
					offset := fs.Int("offset", 0, "entries to skip")
					return func(ctx context.Context, a *app, _ []string) error {
						q, err := f.query(*limit, *offset)
						if err != nil {
							return err
						}
						var l api.DLQList
						if err := a.get(ctx, "/api/v1/dlq", q, &l); err != nil {
							return fail(err, "list dead letters")
						}
						return a.show(l, func(t *tw) { showDLQ(t, &l) })
					}
				},
			},
			dlqActionCommand("retry", "push dead-lettered messages again, then delete them", retryDLQ),
			dlqActionCommand("delete", "delete dead-lettered messages", deleteDLQ),
		},
	}
}

// showDLQ renders a DLQ page.
func showDLQ(t *tw, l *api.DLQList) {
	rows := make([][]string, len(l.Messages))
	for i, m := range l.Messages {
		rows[i] = []string{m.FailedAt, m.Queue + "/" + m.Partition, orDash(m.ConsumerGroup), m.PartitionID, m.TransactionID,
			itoa(m.RetryCount), t.red(truncate(deref(m.ErrorMessage), 40)), truncate(compactJSON(m.Data), 40)}
	}
	t.table([]string{"FAILED", "QUEUE/PARTITION", "GROUP", "PARTITION ID", "TRANSACTION ID", "RETRIES", "ERROR", "DATA"},
		rows, "The dead-letter queue is empty.")
	if int64(len(l.Messages)) < l.Total {
		t.line("")
		t.line("Showing %d from offset %d of %d entries.", len(l.Messages), l.Pagination.Offset, l.Total)
	}
}

// dlqEntry is one dead-lettered message to act on.
type dlqEntry struct {
	PartitionID   string `json:"partitionId"`
	TransactionID string `json:"transactionId"`
	Queue         string `json:"queue"`
	Partition     string `json:"partition"`
	messageID     string
	data          []byte
	traceID       string
}

// dlqOutcome is the per-message result of dlq retry and dlq delete (-o json/yaml).
type dlqOutcome struct {
	dlqEntry
	// NewTransactionID and NewMessageID identify the re-pushed message (retry).
	NewTransactionID string `json:"newTransactionId,omitempty"`
	NewMessageID     string `json:"newMessageId,omitempty"`
	// PushStatus is queued, or duplicate when an earlier retry already pushed it.
	PushStatus string `json:"pushStatus,omitempty"`
	// Deleted reports that the dead-lettered message was deleted.
	Deleted bool `json:"deleted"`
	// Error explains a failure; the message is then left as it was (or, when only
	// the delete failed, is both re-pushed and still dead-lettered).
	Error string `json:"error,omitempty"`
}

// dlqAction acts on one entry.
type dlqAction func(ctx context.Context, a *app, e *dlqEntry) dlqOutcome

// dlqActionCommand builds dlq retry and dlq delete: one message by its ids, or every
// entry matching the filters with --all.
func dlqActionCommand(name, summary string, act dlqAction) *command {
	return &command{
		name: name, args: "[PARTITION_ID TRANSACTION_ID]", maxArgs: 2, summary: summary,
		help: "Give one message by its ids, or --all with filters (asks for confirmation on a\n" +
			"terminal; --yes in scripts). A single message must be dead-lettered unless\n" +
			"--force. Exits 1 when any message failed, 3 when the message does not exist.",
		setup: func(fs *flag.FlagSet) runFunc {
			var f dlqFilter
			f.register(fs)
			all := fs.Bool("all", false, "every dead-lettered message matching the filters")
			yes := fs.Bool("yes", false, "do not ask for confirmation (--all)")
			alias(fs, "y", "yes")
			force := fs.Bool("force", false, "act on a message that is not dead-lettered")
			return func(ctx context.Context, a *app, args []string) error {
				var entries []dlqEntry
				switch {
				case *all && len(args) == 0:
					var err error
					if entries, err = a.collectDLQ(ctx, &f); err != nil {
						return err
					}
					if len(entries) > 0 {
						if err := a.confirm(*yes, "%s %d dead-lettered messages?", capitalize(name), len(entries)); err != nil {
							return err
						}
					}
				case !*all && len(args) == 2:
					e, err := a.dlqMessage(ctx, args[0], args[1], *force)
					if err != nil {
						return err
					}
					entries = []dlqEntry{*e}
				default:
					return usagef("give PARTITION_ID TRANSACTION_ID, or --all")
				}
				return runDLQAction(ctx, a, name, entries, act)
			}
		},
	}
}

// runDLQAction applies act to every entry with a progress line and reports.
func runDLQAction(ctx context.Context, a *app, name string, entries []dlqEntry, act dlqAction) error {
	prog := a.progress()
	out := make([]dlqOutcome, 0, len(entries))
	failed := 0
	for i := range entries {
		if ctx.Err() != nil {
			prog.clear()
			return ctx.Err()
		}
		o := act(ctx, a, &entries[i])
		if o.Error != "" {
			failed++
		}
		out = append(out, o)
		prog.update("dlq %s: %d/%d messages, %d failed", name, i+1, len(entries), failed)
	}
	prog.done("dlq %s: %d messages, %d failed", name, len(entries), failed)
	if err := a.show(out, func(t *tw) {
		rows := make([][]string, len(out))
		for i, o := range out {
			result := t.green(name + " done")
			if o.Error != "" {
				result = t.red(o.Error)
			}
			rows[i] = []string{o.Queue + "/" + o.Partition, o.TransactionID, orDash(o.NewTransactionID), result}
		}
		t.table([]string{"QUEUE/PARTITION", "TRANSACTION ID", "NEW TRANSACTION ID", "RESULT"}, rows, "No dead-lettered messages matched.")
	}); err != nil {
		return err
	}
	if failed > 0 {
		return &codeError{code: ExitFailure, msg: fmt.Sprintf("%d of %d messages failed", failed, len(out))}
	}
	return nil
}

// collectDLQ pages through the DLQ listing (before acting, since acting changes it)
// and returns each message once (a message dead-lettered by several groups has
// several entries).
func (a *app) collectDLQ(ctx context.Context, f *dlqFilter) ([]dlqEntry, error) {
	const page = 1000
	var (
		out  []dlqEntry
		seen = map[[2]string]bool{}
	)
	for offset := 0; ; offset += page {
		q, err := f.query(page, offset)
		if err != nil {
			return nil, err
		}
		var l api.DLQList
		if err := a.get(ctx, "/api/v1/dlq", q, &l); err != nil {
			return nil, fail(err, "list dead letters")
		}
		for _, m := range l.Messages {
			key := [2]string{m.PartitionID, m.TransactionID}
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, dlqEntry{PartitionID: m.PartitionID, TransactionID: m.TransactionID, Queue: m.Queue,
				Partition: m.Partition, messageID: m.ID, data: m.Data})
		}
		if len(l.Messages) < page || int64(offset+page) >= l.Total {
			return out, nil
		}
	}
}

// dlqMessage fetches one message and checks that it is dead-lettered.
func (a *app) dlqMessage(ctx context.Context, partitionID, transactionID string, force bool) (*dlqEntry, error) {
	var d api.MessageDetail
	if err := a.get(ctx, messagePath(partitionID, transactionID), nil, &d); err != nil {
		return nil, fail(err, "message %s", transactionID)
	}
	if d.Status != api.MessageStatusDeadLetter && !force {
		return nil, fail(&codeError{code: ExitFailure, msg: fmt.Sprintf("not dead-lettered (status %s); use --force to act anyway", d.Status)},
			"message %s", transactionID)
	}
	e := &dlqEntry{PartitionID: d.PartitionID, TransactionID: d.TransactionID, Queue: d.Queue, Partition: d.Partition,
		messageID: d.ID, data: d.Payload}
	if d.TraceID != nil {
		e.traceID = *d.TraceID
	}
	return e, nil
}

// retryDLQ pushes the entry's payload again, then deletes the old message.
func retryDLQ(ctx context.Context, a *app, e *dlqEntry) dlqOutcome {
	o := dlqOutcome{dlqEntry: *e, NewTransactionID: "dlq-retry-" + e.messageID}
	c, err := a.client()
	if err != nil {
		o.Error = err.Error()
		return o
	}
	data := e.data
	if len(data) == 0 {
		data = []byte("null")
	}
	res, err := c.Push(ctx, api.PushItem{Queue: e.Queue, Partition: e.Partition, Payload: data,
		TransactionID: o.NewTransactionID, TraceID: e.traceID})
	switch {
	case err != nil:
		o.Error = "push: " + describe(err, a.target)
		return o
	case len(res) != 1:
		o.Error = fmt.Sprintf("push: %d results for one message", len(res))
		return o
	case res[0].Status != api.PushStatusQueued && res[0].Status != api.PushStatusDuplicate:
		o.Error = fmt.Sprintf("push: %s %s", res[0].Status, res[0].Error)
		return o
	}
	o.PushStatus, o.NewMessageID = res[0].Status, res[0].MessageID
	return deleteOutcome(ctx, a, o)
}

// deleteDLQ deletes the entry's message.
func deleteDLQ(ctx context.Context, a *app, e *dlqEntry) dlqOutcome {
	return deleteOutcome(ctx, a, dlqOutcome{dlqEntry: *e})
}

// deleteOutcome deletes o's message and records the result in o.
func deleteOutcome(ctx context.Context, a *app, o dlqOutcome) dlqOutcome {
	var r api.MessageDeleteResponse
	if err := a.call(ctx, http.MethodDelete, messagePath(o.PartitionID, o.TransactionID), nil, nil, &r); err != nil {
		o.Error = "delete: " + describe(err, a.target)
		return o
	}
	o.Deleted = r.Success
	if !r.Success {
		o.Error = "delete: " + r.Message
	}
	return o
}

// messagePath is the route of one message.
func messagePath(partitionID, transactionID string) string {
	return "/api/v1/messages/" + url.PathEscape(partitionID) + "/" + url.PathEscape(transactionID)
}

// capitalize upper-cases the first letter of an ASCII word.
func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
