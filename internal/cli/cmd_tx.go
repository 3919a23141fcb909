package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/queenmq/queen/internal/api"
)

// txCommand is `queenctl tx`.
func txCommand() *command {
	return &command{
		name: "tx", aliases: []string{"transaction"}, summary: "acknowledge and push atomically",
		help: "Calls POST /api/v1/transaction: every operation commits, or none does.\n" +
			"Operations come from --ack and --push, in command-line order, and/or from a\n" +
			"JSON request ({\"operations\":[...]}) in --file ('-': standard input):\n" +
			"  queenctl tx --ack PARTITION_ID/TRANSACTION_ID --push next-stage='{\"id\":1}'\n" +
			"Exits 1 (3 when a message was not found) when the transaction rolled back.",
		setup: func(fs *flag.FlagSet) runFunc {
			var o txOptions
			o.register(fs)
			return func(ctx context.Context, a *app, _ []string) error {
				req := api.TransactionRequest{}
				if o.file != "" {
					if err := readTxFile(a, o.file, &req); err != nil {
						return err
					}
				}
				ops, err := o.operations()
				if err != nil {
					return err
				}
				req.Operations = append(req.Operations, ops...)
				if len(req.Operations) == 0 {
					return usagef("no operations: give --ack, --push or --file")
				}
				return runTx(ctx, a, &req)
			}
		},
	}
}

// txOptions are the flags of tx. ops collects --ack and --push in command-line
// order.
type txOptions struct {
	ops                  []api.TxOperation
	file, group          string
	ackStatus            string
	asString, strictJSON bool
}

// register adds the flags of tx to fs.
func (o *txOptions) register(fs *flag.FlagSet) {
	fs.Var(funcValue(func(s string) error {
		p, t, ok := strings.Cut(s, "/")
		if !ok || p == "" || t == "" {
			return fmt.Errorf("want PARTITION_ID/TRANSACTION_ID")
		}
		o.ops = append(o.ops, api.TxOperation{Type: api.TxOpAck, PartitionID: p, TransactionID: t})
		return nil
	}), "ack", "acknowledge `PARTITION_ID/TRANSACTION_ID` (repeatable)")
	fs.Var(funcValue(func(s string) error {
		target, payload, ok := strings.Cut(s, "=")
		if !ok || target == "" {
			return fmt.Errorf("want QUEUE[/PARTITION]=PAYLOAD")
		}
		queue, partition, _ := strings.Cut(target, "/")
		o.ops = append(o.ops, api.TxOperation{Type: api.TxOpPush,
			Items: []api.PushItem{{Queue: queue, Partition: partition, Payload: json.RawMessage(payload)}}})
		return nil
	}), "push", "push `QUEUE[/PARTITION]=PAYLOAD` (repeatable)")
	fs.StringVar(&o.file, "file", "", "JSON transaction request ('-': standard input)")
	alias(fs, "f", "file")
	fs.StringVar(&o.group, "group", "", "consumer group of the --ack operations (default: queue mode)")
	alias(fs, "g", "group")
	fs.StringVar(&o.ackStatus, "ack-status", api.AckStatusCompleted, "status of the --ack operations: completed or dlq")
	fs.BoolVar(&o.asString, "string", false, "send --push payloads as JSON strings")
	fs.BoolVar(&o.strictJSON, "json", false, "require --push payloads to be valid JSON")
}

// operations completes the --ack and --push operations: the group and status of
// acks, the payload rules of push (as for queenctl push).
func (o *txOptions) operations() ([]api.TxOperation, error) {
	po := &pushOptions{asString: o.asString, strictJSON: o.strictJSON}
	for i := range o.ops {
		op := &o.ops[i]
		if op.Type == api.TxOpAck {
			op.ConsumerGroup, op.Status = o.group, o.ackStatus
			continue
		}
		raw, err := toPayload(string(op.Items[0].Payload), po)
		if err != nil {
			return nil, usagef("--push %s: %v", op.Items[0].Queue, err)
		}
		op.Items[0].Payload = raw
	}
	return o.ops, nil
}

// readTxFile reads a JSON transaction request from a file or standard input.
func readTxFile(a *app, file string, req *api.TransactionRequest) error {
	var (
		data []byte
		err  error
	)
	if file == "-" {
		data, err = io.ReadAll(a.stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return usagef("--file: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(req); err != nil {
		return usagef("--file %s: not a transaction request ({\"operations\":[...]}): %v", file, err)
	}
	return nil
}

// runTx sends the transaction and reports its outcome.
func runTx(ctx context.Context, a *app, req *api.TransactionRequest) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	r, err := c.Transaction(ctx, *req)
	if err != nil {
		return fail(err, "transaction")
	}
	if err := a.show(r, func(t *tw) {
		state := t.state("committed")
		if !r.Success {
			state = t.state("rolled back") + ": " + r.Error
		}
		t.line("Transaction %s %s.", r.TransactionID, state)
		if len(r.Results) == 0 {
			return
		}
		t.line("")
		rows := make([][]string, len(r.Results))
		for i, x := range r.Results {
			detail := x.QueueName + " " + x.MessageID
			if x.Type == api.TxOpAck {
				detail = deref(x.Error)
				if x.DLQ {
					detail = "moved to the dead-letter queue"
				}
			}
			rows[i] = []string{itoa(x.Index), x.Type, t.state(yesNoOK(x.Success)), x.TransactionID, strings.TrimSpace(detail)}
		}
		t.table([]string{"#", "TYPE", "RESULT", "TRANSACTION ID", "DETAIL"}, rows, "")
	}); err != nil {
		return err
	}
	if !r.Success {
		return fail(outcomeError("rolled back: %s", r.Error), "transaction")
	}
	return nil
}

// yesNoOK renders an operation's success.
func yesNoOK(ok bool) string {
	if ok {
		return "ok"
	}
	return "failed"
}
