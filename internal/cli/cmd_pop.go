package cli

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// popFlags are the flags pop shares with tail.
type popFlags struct {
	partition, group string
	batch            int
}

// register adds the shared pop flags to fs.
func (p *popFlags) register(fs *flag.FlagSet, batchDefault int) {
	fs.StringVar(&p.partition, "partition", "", "only this partition (default: any)")
	alias(fs, "p", "partition")
	fs.StringVar(&p.group, "group", "", "consumer group (default: queue mode, "+api.QueueModeGroup+")")
	alias(fs, "g", "group")
	fs.IntVar(&p.batch, "batch", batchDefault, "most messages per pop")
	alias(fs, "n", "batch")
}

// popCommand is `queenctl pop`.
func popCommand() *command {
	return &command{
		name: "pop", args: "[QUEUE]", maxArgs: 1, summary: "take messages under a lease (or auto-acked)",
		help: "Pops up to --batch messages and prints them with the lease id that acks them:\n" +
			"  queenctl ack PARTITION_ID TRANSACTION_ID --lease LEASE_ID\n" +
			"Without QUEUE, --namespace and/or --task pop across the matching queues.\n" +
			"An empty pop prints \"No messages.\" and exits 0.",
		setup: func(fs *flag.FlagSet) runFunc {
			var (
				p   popFlags
				opt client.PopOptions
			)
			p.register(fs, 1)
			fs.BoolVar(&opt.Wait, "wait", false, "long-poll until a message arrives or --wait-timeout passes")
			alias(fs, "w", "wait")
			fs.DurationVar(&opt.Timeout, "wait-timeout", 30*time.Second, "how long --wait waits")
			fs.BoolVar(&opt.AutoAck, "auto-ack", false, "acknowledge at delivery (no lease)")
			fs.IntVar(&opt.Partitions, "partitions", 1, "claim up to this many partitions in one pop")
			fs.StringVar(&opt.SubscriptionMode, "subscription-mode", "", "for a new consumer group: new (skip history) or all")
			fs.StringVar(&opt.SubscriptionFrom, "subscription-from", "", "for a new consumer group: now or a timestamp")
			fs.StringVar(&opt.Namespace, "namespace", "", "pop from the queues of this namespace (without QUEUE)")
			fs.StringVar(&opt.Task, "task", "", "pop from the queues of this task (without QUEUE)")
			return func(ctx context.Context, a *app, args []string) error {
				if len(args) == 1 {
					opt.Queue = args[0]
				} else if opt.Namespace == "" && opt.Task == "" {
					return usagef("give a QUEUE, or --namespace and/or --task")
				}
				if p.batch < 1 {
					return usagef("--batch must be at least 1")
				}
				if opt.Timeout < time.Millisecond {
					// The client sends its default for 0: refuse rather than wait 30 s.
					return usagef("--wait-timeout must be at least 1ms (without --wait a pop does not wait)")
				}
				opt.Partition, opt.ConsumerGroup, opt.Batch = p.partition, p.group, p.batch
				c, err := a.client()
				if err != nil {
					return err
				}
				r, err := c.Pop(ctx, opt)
				if err != nil {
					return fail(err, "pop %s", popTarget(&opt))
				}
				if r.Error != "" && len(r.Messages) == 0 && r.Error != "no_available_partition" &&
					r.Error != "partition_not_found" && r.Error != "lease_held" {
					return fail(&codeError{code: ExitFailure, msg: r.Error}, "pop %s", popTarget(&opt))
				}
				var v any = r
				if len(r.Messages) == 0 {
					v = map[string][]api.Message{"messages": {}} // whatever empty answer the broker sent
				}
				return a.show(v, func(t *tw) { showPop(t, r) })
			}
		},
	}
}

// popTarget names what a pop reads from, for messages.
func popTarget(o *client.PopOptions) string {
	switch {
	case o.Queue != "" && o.Partition != "":
		return o.Queue + "/" + o.Partition
	case o.Queue != "":
		return o.Queue
	}
	return fmt.Sprintf("namespace %q task %q", o.Namespace, o.Task)
}

// showPop renders a pop answer.
func showPop(t *tw, r *api.PopResponse) {
	if len(r.Messages) == 0 {
		t.line("No messages.")
		return
	}
	lease := r.LeaseID
	if lease == "" {
		lease = "none (auto-acked)"
	}
	t.kv([][2]string{{"Queue", r.Queue}, {"Consumer group", r.ConsumerGroup}, {"Lease", t.cyan(lease)}})
	t.line("")
	rows := make([][]string, len(r.Messages))
	for i, m := range r.Messages {
		rows[i] = []string{m.Partition, m.PartitionID, m.TransactionID, m.CreatedAt, truncate(compactJSON(m.Data), 60)}
	}
	t.table([]string{"PARTITION", "PARTITION ID", "TRANSACTION ID", "CREATED", "DATA"}, rows, "")
}

// ackCommand is `queenctl ack`.
func ackCommand() *command {
	return &command{
		name: "ack", args: "PARTITION_ID TRANSACTION_ID", minArgs: 2, maxArgs: 2,
		summary: "acknowledge a message (completed, failed, dlq or retry)",
		help: "Calls POST /api/v1/ack. Exits 3 when the message does not exist and 1 when\n" +
			"the broker refused the ack (e.g. the lease expired).",
		setup: func(fs *flag.FlagSet) runFunc {
			var req api.AckRequest
			fs.StringVar(&req.LeaseID, "lease", "", "lease id from the pop (checked when given)")
			fs.StringVar(&req.Status, "status", api.AckStatusCompleted, "completed, failed, dlq or retry")
			fs.StringVar(&req.ConsumerGroup, "group", "", "consumer group (default: queue mode)")
			alias(fs, "g", "group")
			fs.StringVar(&req.Error, "error", "", "error text stored with a failed or dlq ack")
			return func(ctx context.Context, a *app, args []string) error {
				switch req.Status {
				case api.AckStatusCompleted, api.AckStatusSuccess, api.AckStatusFailed, api.AckStatusDLQ, api.AckStatusRetry:
				default:
					return usagef("--status %q: want completed, failed, dlq or retry", req.Status)
				}
				req.PartitionID, req.TransactionID = args[0], args[1]
				c, err := a.client()
				if err != nil {
					return err
				}
				r, err := c.Ack(ctx, req)
				if err != nil {
					return fail(err, "ack %s", req.TransactionID)
				}
				if err := a.show([]api.AckResult{r}, func(t *tw) { showAck(t, &req, &r) }); err != nil {
					return err
				}
				if !r.Success {
					return fail(outcomeError("%s", deref(r.Error)), "ack %s", req.TransactionID)
				}
				return nil
			}
		},
	}
}

// showAck renders an ack outcome.
func showAck(t *tw, req *api.AckRequest, r *api.AckResult) {
	if !r.Success {
		t.line("Not acknowledged: %s.", t.red(deref(r.Error)))
		return
	}
	where := deref(r.QueueName) + "/" + deref(r.PartitionName)
	extra := ""
	if r.LeaseReleased != nil && *r.LeaseReleased {
		extra = ", lease released"
	}
	if r.DLQ {
		extra += ", moved to the dead-letter queue"
	}
	t.line("Acknowledged %s in %s as %s%s.", req.TransactionID, where, t.state(req.Status), extra)
}

// leaseCommand is `queenctl lease`.
func leaseCommand() *command {
	return &command{
		name: "lease", summary: "extend a pop's lease",
		subs: []*command{{
			name: "extend", args: "LEASE_ID", minArgs: 1, maxArgs: 1,
			summary: "keep a lease for at least --seconds more",
			help: "Calls POST /api/v1/lease/LEASE_ID/extend. Exits 3 when the lease is unknown\n" +
				"and 1 when it has already expired.",
			setup: func(fs *flag.FlagSet) runFunc {
				seconds := 0
				unitVar(fs, &seconds, "seconds", time.Second, "seconds (or a duration) from now (default 60)")
				return func(ctx context.Context, a *app, args []string) error {
					c, err := a.client()
					if err != nil {
						return err
					}
					r, err := c.ExtendLease(ctx, args[0], seconds)
					if err != nil {
						return fail(err, "extend lease %s", args[0])
					}
					if err := a.show([]api.LeaseExtendResult{r}, func(t *tw) {
						if r.Success {
							t.line("Lease %s now expires at %s.", args[0], deref(r.ExpiresAt))
						} else {
							t.line("Lease %s not extended: %s.", args[0], t.red(deref(r.Error)))
						}
					}); err != nil {
						return err
					}
					if !r.Success {
						return fail(outcomeError("%s", deref(r.Error)), "extend lease %s", args[0])
					}
					return nil
				}
			},
		}},
	}
}
