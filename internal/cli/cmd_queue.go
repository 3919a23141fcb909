package cli

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/queenmq/queen/internal/api"
)

// queueCommand is `queenctl queue`.
func queueCommand() *command {
	return &command{
		name: "queue", aliases: []string{"queues", "q"}, summary: "list, show, configure and delete queues",
		subs: []*command{
			{
				name: "list", aliases: []string{"ls"}, summary: "list queues with their message counters",
				setup: func(fs *flag.FlagSet) runFunc {
					ns := fs.String("namespace", "", "only queues of this namespace")
					task := fs.String("task", "", "only queues of this task")
					return func(ctx context.Context, a *app, _ []string) error {
						q := url.Values{}
						setQuery(q, "namespace", *ns)
						setQuery(q, "task", *task)
						var l api.QueueList
						if err := a.get(ctx, "/api/v1/resources/queues", q, &l); err != nil {
							return fail(err, "list queues")
						}
						return a.show(l, func(t *tw) { showQueueList(t, &l) })
					}
				},
			},
			{
				name: "get", aliases: []string{"describe", "show"}, args: "QUEUE", minArgs: 1, maxArgs: 1,
				summary: "show a queue with its partitions and message counters",
				setup: func(*flag.FlagSet) runFunc {
					return func(ctx context.Context, a *app, args []string) error {
						var d api.QueueDetail
						if err := a.get(ctx, "/api/v1/resources/queues/"+url.PathEscape(args[0]), nil, &d); err != nil {
							return fail(err, "queue %q", args[0])
						}
						return a.show(d, func(t *tw) { showQueue(t, &d) })
					}
				},
			},
			queueConfigureCommand(),
			{
				name: "delete", aliases: []string{"rm"}, args: "QUEUE", minArgs: 1, maxArgs: 1,
				summary: "delete a queue with its partitions, messages and cursors",
				help: "Asks for confirmation on a terminal; give --yes in scripts. Exits 3 when\n" +
					"the queue did not exist, unless --ignore-not-found.",
				setup: func(fs *flag.FlagSet) runFunc {
					yes := fs.Bool("yes", false, "do not ask for confirmation")
					alias(fs, "y", "yes")
					ignore := fs.Bool("ignore-not-found", false, "exit 0 when the queue does not exist")
					return func(ctx context.Context, a *app, args []string) error {
						name := args[0]
						if err := a.confirm(*yes, "Delete queue %q with all its messages?", name); err != nil {
							return err
						}
						var r api.QueueDeleteResponse
						if err := a.call(ctx, http.MethodDelete, "/api/v1/resources/queues/"+url.PathEscape(name), nil, nil, &r); err != nil {
							return fail(err, "delete queue %q", name)
						}
						if err := a.show(r, func(t *tw) {
							if r.Existed {
								t.line("Deleted queue %s.", name)
							} else {
								t.line("Queue %s did not exist.", name)
							}
						}); err != nil {
							return err
						}
						if !r.Existed && !*ignore {
							return &codeError{code: ExitNotFound, msg: fmt.Sprintf("queue %q does not exist", name)}
						}
						return nil
					}
				},
			},
		},
	}
}

// showQueueList renders a queue list.
func showQueueList(t *tw, l *api.QueueList) {
	rows := make([][]string, len(l.Queues))
	for i, q := range l.Queues {
		rows[i] = []string{q.Name, orDash(q.Namespace), orDash(q.Task), itoa(q.Partitions),
			itoa(q.Messages.Total), t.yellow(itoa(q.Messages.Pending)), itoa(q.Messages.Processing), q.CreatedAt}
	}
	t.table([]string{"QUEUE", "NAMESPACE", "TASK", "PARTITIONS", "TOTAL", "PENDING", "PROCESSING", "CREATED"}, rows, "No queues.")
}

// showQueue renders one queue.
func showQueue(t *tw, d *api.QueueDetail) {
	c := d.Totals
	t.kv([][2]string{
		{"Queue", t.bold(d.Name)},
		{"Namespace", orDash(d.Namespace)},
		{"Task", orDash(d.Task)},
		{"Created", d.CreatedAt},
		{"Messages", counters(t, c) + ", in queue mode"},
	})
	t.line("")
	if d.Options != nil { // an upstream broker sends no options
		t.table([]string{"OPTION", "VALUE"}, optionRows(*d.Options, d.EnforcedOptions), "")
		t.line("")
	}
	rows := make([][]string, len(d.Partitions))
	for i, p := range d.Partitions {
		s := p.Stats
		rows[i] = []string{p.Name, itoa(s.Total), itoa(s.Pending), itoa(s.Processing), itoa(s.Completed),
			itoa(s.Failed), itoa(s.DeadLetter), deref(p.OldestMessage), deref(p.NewestMessage)}
	}
	t.table([]string{"PARTITION", "TOTAL", "PENDING", "PROCESSING", "COMPLETED", "FAILED", "DEAD-LETTER", "OLDEST", "NEWEST"},
		rows, "No partitions.")
	if len(d.ConsumerGroups) > 0 { // omitted when nobody consumes the queue, and by upstream
		t.line("")
		showGroupLags(t, d.ConsumerGroups)
	}
}

// counters renders the six message counters on one line.
func counters(t *tw, c api.Counters) string {
	return fmt.Sprintf("%d total, %s pending, %d processing, %s completed, %s failed, %s dead-letter",
		c.Total, t.yellow(itoa(c.Pending)), c.Processing, t.green(itoa(c.Completed)),
		redIf(t, int64(c.Failed)), redIf(t, int64(c.DeadLetter)))
}

// queueOption is one option flag of queue configure.
type queueOption struct {
	flag  string
	usage string
	// unit is the wire unit of an integer option (seconds, ms); 0 is a plain count.
	unit time.Duration
	// intField or boolField selects the option in the request.
	intField  func(*api.QueueOptions) **int
	boolField func(*api.QueueOptions) **bool
}

// queueOptions lists every option of POST /api/v1/configure.
func queueOptions() []queueOption {
	return []queueOption{
		{flag: "lease-time", unit: time.Second, usage: "lease of a pop, seconds or a duration (default 300)",
			intField: func(o *api.QueueOptions) **int { return &o.LeaseTime }},
		{flag: "retry-limit", usage: "failed acks before the dead-letter queue (default 3)",
			intField: func(o *api.QueueOptions) **int { return &o.RetryLimit }},
		{flag: "retry-delay", unit: time.Millisecond, usage: "wait before redelivering a failed batch, ms or a duration",
			intField: func(o *api.QueueOptions) **int { return &o.RetryDelay }},
		{flag: "priority", usage: "order in namespace/task pops, highest first",
			intField: func(o *api.QueueOptions) **int { return &o.Priority }},
		{flag: "max-size", usage: "most messages stored (0: unlimited)",
			intField: func(o *api.QueueOptions) **int { return &o.MaxSize }},
		{flag: "ttl", unit: time.Second, usage: "never deliver messages older than this, seconds or a duration (0: never)",
			intField: func(o *api.QueueOptions) **int { return &o.TTL }},
		{flag: "delayed-processing", unit: time.Second, usage: "deliver a message only once it is this old",
			intField: func(o *api.QueueOptions) **int { return &o.DelayedProcessing }},
		{flag: "window-buffer", unit: time.Second, usage: "serve a partition only once its newest message is this old",
			intField: func(o *api.QueueOptions) **int { return &o.WindowBuffer }},
		{flag: "retention", unit: time.Second, usage: "retention of pending messages (retentionSeconds)",
			intField: func(o *api.QueueOptions) **int { return &o.RetentionSeconds }},
		{flag: "completed-retention", unit: time.Second, usage: "retention of completed messages (completedRetentionSeconds)",
			intField: func(o *api.QueueOptions) **int { return &o.CompletedRetentionSeconds }},
		{flag: "max-wait-time", unit: time.Second, usage: "evict pending messages older than this (maxWaitTimeSeconds)",
			intField: func(o *api.QueueOptions) **int { return &o.MaxWaitTimeSeconds }},
		{flag: "retention-enabled", usage: "run the retention jobs on this queue",
			boolField: func(o *api.QueueOptions) **bool { return &o.RetentionEnabled }},
		{flag: "encryption", usage: "store payloads encrypted (needs QUEEN_ENCRYPTION_KEY on the broker)",
			boolField: func(o *api.QueueOptions) **bool { return &o.EncryptionEnabled }},
		{flag: "dead-letter-queue", usage: "deadLetterQueue; with --dlq-after-max-retries=false too, a message that exhausts its retries is dropped, not dead-lettered",
			boolField: func(o *api.QueueOptions) **bool { return &o.DeadLetterQueue }},
		{flag: "dlq-after-max-retries", usage: "dlqAfterMaxRetries (see --dead-letter-queue)",
			boolField: func(o *api.QueueOptions) **bool { return &o.DLQAfterMaxRetries }},
	}
}

// queueConfigureCommand is `queenctl queue configure`.
func queueConfigureCommand() *command {
	return &command{
		name: "configure", aliases: []string{"create", "config"}, args: "QUEUE", minArgs: 1, maxArgs: 1,
		summary: "create a queue or change its options",
		help: "Calls POST /api/v1/configure. Only the options given change: the others keep\n" +
			"their stored values (a new queue takes the defaults). With --replace every option\n" +
			"not given goes back to its default. Durations take seconds (or ms for\n" +
			"--retry-delay) or a Go duration such as 5m.",
		setup: func(fs *flag.FlagSet) runFunc {
			opts := queueOptions()
			ints := make([]int, len(opts))
			bools := make([]bool, len(opts))
			for i, o := range opts {
				if o.intField != nil {
					unit := o.unit
					if unit == 0 {
						unit = 1
					}
					unitVar(fs, &ints[i], o.flag, unit, o.usage)
				} else {
					fs.BoolVar(&bools[i], o.flag, false, o.usage)
				}
			}
			ns := fs.String("namespace", "", "namespace of the queue")
			task := fs.String("task", "", "task of the queue")
			replace := fs.Bool("replace", false, "reset every option not given to its default")
			return func(ctx context.Context, a *app, args []string) error {
				req := api.ConfigureRequest{Queue: args[0], Options: &api.QueueOptions{}}
				if *replace {
					req.Mode = api.ConfigureModeReplace
				}
				for i, o := range opts {
					if !isSet(fs, o.flag) {
						continue
					}
					if o.intField != nil {
						*o.intField(req.Options) = api.Int(ints[i])
					} else {
						*o.boolField(req.Options) = api.Bool(bools[i])
					}
				}
				if isSet(fs, "namespace") {
					req.Namespace = ns
				}
				if isSet(fs, "task") {
					req.Task = task
				}
				c, err := a.client()
				if err != nil {
					return err
				}
				r, err := c.Configure(ctx, req)
				if err != nil {
					return fail(err, "configure queue %q", args[0])
				}
				return a.show(r, func(t *tw) { showConfigured(t, r) })
			}
		},
	}
}

// showConfigured renders a configure answer: the queue and its whole option set.
func showConfigured(t *tw, r *api.ConfigureResponse) {
	t.line("Configured queue %s (namespace %s, task %s).", t.bold(r.Queue), orDash(r.Namespace), orDash(r.Task))
	t.line("")
	t.table([]string{"OPTION", "VALUE"}, optionRows(r.Options, nil), "")
}

// optionRows renders an option set, one row per option. With e, a non-zero ttl,
// retryDelay and maxSize also say whether the broker applies them: upstream stores
// 3600 s and 1000 ms on every queue and applies none of the three to live pushes and
// pops, and queen applies only values set through its own configure.
func optionRows(o api.QueueOptionsEcho, e *api.EnforcedOptions) [][]string {
	ttl, retryDelay, maxSize := itoa(o.TTL)+"s", itoa(o.RetryDelay)+"ms", itoa(o.MaxSize)
	if e != nil {
		ttl, retryDelay = withEnforcement(ttl, o.TTL, e.TTL), withEnforcement(retryDelay, o.RetryDelay, e.RetryDelay)
		maxSize = withEnforcement(maxSize, o.MaxSize, e.MaxSize)
	}
	return [][]string{
		{"leaseTime", itoa(o.LeaseTime) + "s"},
		{"retryLimit", itoa(o.RetryLimit)},
		{"retryDelay", retryDelay},
		{"priority", itoa(o.Priority)},
		{"maxSize", maxSize},
		{"ttl", ttl},
		{"delayedProcessing", itoa(o.DelayedProcessing) + "s"},
		{"windowBuffer", itoa(o.WindowBuffer) + "s"},
		{"retentionSeconds", itoa(o.RetentionSeconds) + "s"},
		{"completedRetentionSeconds", itoa(o.CompletedRetentionSeconds) + "s"},
		{"maxWaitTimeSeconds", itoa(o.MaxWaitTimeSeconds) + "s"},
		{"retentionEnabled", yesNo(o.RetentionEnabled)},
		{"encryptionEnabled", yesNo(o.EncryptionEnabled)},
		{"deadLetterQueue", yesNo(o.DeadLetterQueue)},
		{"dlqAfterMaxRetries", yesNo(o.DLQAfterMaxRetries)},
	}
}

// withEnforcement adds to a non-zero value whether it is applied (0 is off either way).
func withEnforcement(value string, n int, enforced bool) string {
	switch {
	case n == 0:
		return value
	case enforced:
		return value + " (enforced)"
	}
	return value + " (stored by upstream, not enforced)"
}
