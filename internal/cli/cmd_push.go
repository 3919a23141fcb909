package cli

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// maxLine bounds one payload line of push --file / stdin (the broker's default body
// limit is 16 MiB).
const maxLine = 16 << 20

// pushOptions are the flags of push.
type pushOptions struct {
	partition, transactionID, traceID, file string
	asString, strictJSON                    bool
	batch                                   int
}

// pushCommand is `queenctl push`.
func pushCommand() *command {
	return &command{
		name: "push", args: "QUEUE [PAYLOAD...]", minArgs: 1, maxArgs: -1,
		summary: "push messages from arguments, a file or standard input",
		help: "Each PAYLOAD argument is one message. Without payload arguments, messages are\n" +
			"read one per line from --file, or from standard input ('-' or no --file);\n" +
			"blank lines are skipped, and lines are sent in batches of --batch.\n\n" +
			"A payload that is valid JSON is sent as that JSON ({\"id\":1}, 42, \"text\");\n" +
			"anything else is sent as a JSON string. --string sends every payload as a\n" +
			"string; --json refuses payloads that are not valid JSON.\n\n" +
			"Exits 1 when any message was not stored (a duplicate transaction id is not a\n" +
			"failure), 5 when the broker refuses pushes (push maintenance, database down).",
		setup: func(fs *flag.FlagSet) runFunc {
			var o pushOptions
			fs.StringVar(&o.partition, "partition", "", "partition (default Default)")
			alias(fs, "p", "partition")
			fs.StringVar(&o.transactionID, "transaction-id", "", "transaction id (deduplication key) of a single message")
			fs.StringVar(&o.traceID, "trace-id", "", "trace id (a UUID) for every message")
			fs.StringVar(&o.file, "file", "", "read one payload per line from this file ('-': standard input)")
			alias(fs, "f", "file")
			fs.BoolVar(&o.asString, "string", false, "send every payload as a JSON string")
			fs.BoolVar(&o.strictJSON, "json", false, "require every payload to be valid JSON")
			fs.IntVar(&o.batch, "batch", 500, "messages per request when reading lines")
			return func(ctx context.Context, a *app, args []string) error { return runPush(ctx, a, args, &o) }
		},
	}
}

// runPush implements push.
func runPush(ctx context.Context, a *app, args []string, o *pushOptions) error {
	queue, payloads := args[0], args[1:]
	switch {
	case o.asString && o.strictJSON:
		return usagef("--string and --json exclude each other")
	case len(payloads) > 0 && o.file != "":
		return usagef("give payloads as arguments or with --file, not both")
	case o.transactionID != "" && len(payloads) != 1:
		return usagef("--transaction-id needs exactly one payload argument")
	case o.batch < 1:
		return usagef("--batch must be at least 1")
	}
	if len(payloads) > 0 {
		return pushArgs(ctx, a, queue, payloads, o)
	}
	var (
		in   = a.stdin
		size int64
		name = "standard input"
	)
	if o.file != "" && o.file != "-" {
		f, err := os.Open(o.file)
		if err != nil {
			return usagef("--file: %v", err)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		in, name = f, o.file
	} else if isTerminal(a.stdin) {
		fmt.Fprintln(a.stderr, "Reading payloads from the terminal, one per line; end with Ctrl-D.")
	}
	return pushLines(ctx, a, queue, in, size, name, o)
}

// pushArgs pushes the payload arguments in one request.
func pushArgs(ctx context.Context, a *app, queue string, payloads []string, o *pushOptions) error {
	items := make([]api.PushItem, len(payloads))
	for i, p := range payloads {
		raw, err := toPayload(p, o)
		if err != nil {
			return usagef("payload %d: %v", i+1, err)
		}
		items[i] = api.PushItem{Queue: queue, Partition: o.partition, Payload: raw,
			TransactionID: o.transactionID, TraceID: o.traceID}
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	res, err := c.Push(ctx, items...)
	if err != nil {
		return fail(err, "push to %s", queue)
	}
	if err := a.show(res, func(t *tw) { showPushResults(t, res) }); err != nil {
		return err
	}
	var tally pushTally
	tally.add(res)
	return tally.err()
}

// pushLines streams payload lines from r in batches, with a progress line.
func pushLines(ctx context.Context, a *app, queue string, r io.Reader, size int64, name string, o *pushOptions) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	lp := &linePush{a: a, c: c, queue: queue, name: name, o: o, in: r, size: size, prog: a.progress(), start: time.Now()}
	if err := lp.readAll(ctx); err != nil {
		lp.prog.clear()
		return err
	}
	lp.prog.done("")
	return lp.report()
}

// linePush is one bulk push from lines.
type linePush struct {
	a     *app
	c     *client.Client
	queue string
	name  string // of the input, for messages
	o     *pushOptions
	in    io.Reader
	size  int64 // of the input in bytes; 0 when unknown
	// done counts the bytes of the lines read so far (the progress share).
	done  int64
	prog  *progress
	start time.Time

	tally pushTally
	batch []api.PushItem
	all   []api.PushResult // kept for -o json/yaml only
	line  int
}

// readAll reads every line and pushes it, batch by batch.
func (lp *linePush) readAll(ctx context.Context) error {
	sc := bufio.NewScanner(lp.in)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		lp.line++
		lp.done += int64(len(sc.Bytes())) + 1
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		raw, err := toPayload(line, lp.o)
		if err != nil {
			return usagef("%s line %d: %v", lp.name, lp.line, err)
		}
		lp.batch = append(lp.batch, api.PushItem{Queue: lp.queue, Partition: lp.o.partition, Payload: raw, TraceID: lp.o.traceID})
		if len(lp.batch) >= lp.o.batch {
			if err := lp.flush(ctx); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return usagef("%s line %d: longer than %d bytes", lp.name, lp.line+1, maxLine)
		}
		return fmt.Errorf("read %s: %w", lp.name, err)
	}
	return lp.flush(ctx)
}

// flush pushes the pending batch.
func (lp *linePush) flush(ctx context.Context) error {
	if len(lp.batch) == 0 {
		return nil
	}
	res, err := lp.c.Push(ctx, lp.batch...)
	if err != nil {
		return fail(err, "push to %s: batch ending at line %d of %s (%d messages stored before it)",
			lp.queue, lp.line, lp.name, lp.tally.queued+lp.tally.buffered)
	}
	lp.tally.add(res)
	if lp.a.g.output != formatTable {
		lp.all = append(lp.all, res...)
	}
	lp.batch = lp.batch[:0]
	lp.prog.update("%s", lp.tally.progressLine(min(lp.done, lp.size), lp.size, time.Since(lp.start)))
	return nil
}

// report prints the outcome: a summary line, or every result with -o json/yaml.
func (lp *linePush) report() error {
	elapsed := time.Since(lp.start)
	partition := cmp.Or(lp.o.partition, api.DefaultPartition)
	if lp.all == nil {
		lp.all = []api.PushResult{}
	}
	if err := lp.a.show(lp.all, func(t *tw) {
		t.line("Pushed %d messages from %s to %s/%s in %s: %s.", lp.tally.total, lp.name, lp.queue, partition,
			elapsed.Round(time.Millisecond), lp.tally.summary(t))
	}); err != nil {
		return err
	}
	return lp.tally.err()
}

// toPayload turns a command-line or line payload into the JSON to send.
func toPayload(s string, o *pushOptions) (json.RawMessage, error) {
	switch {
	case o.asString:
		return json.Marshal(s)
	case json.Valid([]byte(s)):
		return json.RawMessage(s), nil
	case o.strictJSON:
		return nil, fmt.Errorf("not valid JSON (drop --json to send it as a string): %s", truncate(s, 40))
	}
	return json.Marshal(s)
}

// showPushResults renders push results as a table.
func showPushResults(t *tw, res []api.PushResult) {
	rows := make([][]string, len(res))
	for i, r := range res {
		id := r.MessageID
		if r.Status == api.PushStatusFailed {
			id = r.Error
		}
		rows[i] = []string{t.state(r.Status), orDash(r.ID()), orDash(id), orDash(r.PartitionID)}
	}
	t.table([]string{"STATUS", "TRANSACTION ID", "MESSAGE ID", "PARTITION ID"}, rows, "Nothing pushed.")
}

// pushTally counts push outcomes.
type pushTally struct {
	total, queued, duplicate, buffered, failed int
	firstError                                 string
}

// add counts a batch of results.
func (p *pushTally) add(res []api.PushResult) {
	for _, r := range res {
		p.total++
		switch r.Status {
		case api.PushStatusQueued:
			p.queued++
		case api.PushStatusDuplicate:
			p.duplicate++
		case api.PushStatusBuffered:
			p.buffered++
		default:
			p.failed++
			if p.firstError == "" {
				p.firstError = fmt.Sprintf("%s (%s)", orDash(r.Error), r.Status)
			}
		}
	}
}

// summary renders the counts for the final line.
func (p *pushTally) summary(t *tw) string {
	s := fmt.Sprintf("%s queued, %s duplicate", t.green(itoa(p.queued)), itoa(p.duplicate))
	if p.buffered > 0 {
		s += fmt.Sprintf(", %d buffered", p.buffered)
	}
	return s + fmt.Sprintf(", %s failed", redIf(t, int64(p.failed)))
}

// progressLine is the progress text after elapsed: messages, rate and, when the
// input size is known, the share read.
func (p *pushTally) progressLine(read, size int64, elapsed time.Duration) string {
	rate := float64(p.total) / max(elapsed.Seconds(), 0.001)
	s := fmt.Sprintf("pushed %d messages (%d queued, %d duplicate, %d failed), %.0f msg/s",
		p.total, p.queued, p.duplicate, p.failed, rate)
	if size > 0 {
		s = fmt.Sprintf("%3.0f%% %s", 100*float64(read)/float64(size), s)
	}
	return s
}

// err is the command's outcome: an error when any item failed.
func (p *pushTally) err() error {
	if p.failed == 0 {
		return nil
	}
	return &codeError{code: ExitFailure, msg: fmt.Sprintf("%d of %d messages were not stored; first: %s", p.failed, p.total, p.firstError)}
}
