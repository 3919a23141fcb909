package cli

import (
	"context"
	"flag"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// streamsCommand is `queenctl streams`.
func streamsCommand() *command {
	return &command{
		name: "streams", aliases: []string{"stream"}, summary: "list, show, reset and delete stream queries",
		help: "A stream query is registered by the Stream runtime of an SDK and keeps state per\n" +
			"source partition (a shard: a partition with state or recorded cycles). 'reset'\n" +
			"deletes the state and keeps the registration, so the next cycles start from\n" +
			"empty state; 'delete' removes the query too, and a worker still running it must\n" +
			"register it again. Neither moves the query's consumer group on its source\n" +
			"queue: to process old messages again, also seek that group (cg seek, cg replay).",
		subs: []*command{
			{
				name: "list", aliases: []string{"ls"}, summary: "list stream queries by name with their shards, state and cycles",
				setup: func(fs *flag.FlagSet) runFunc {
					page := streamPageFlags(fs, "queries")
					return func(ctx context.Context, a *app, _ []string) error {
						c, err := a.streamClient(*page)
						if err != nil {
							return err
						}
						l, err := c.ListStreamQueries(ctx, *page)
						if err != nil {
							return fail(err, "list stream queries")
						}
						return a.show(l, func(t *tw) { showStreamQueries(t, l) })
					}
				},
			},
			{
				name: "get", aliases: []string{"describe", "show"}, args: "NAME", minArgs: 1, maxArgs: 1,
				summary: "show a stream query with its source partitions, most recently cycled first",
				setup: func(fs *flag.FlagSet) runFunc {
					page := streamPageFlags(fs, "partitions")
					return func(ctx context.Context, a *app, args []string) error {
						c, err := a.streamClient(*page)
						if err != nil {
							return err
						}
						d, err := c.GetStreamQuery(ctx, args[0], *page)
						if err != nil {
							return fail(err, "stream query %q", args[0])
						}
						return a.show(d, func(t *tw) { showStreamQuery(t, d) })
					}
				},
			},
			streamRemoveCommand("reset", "delete a stream query's state and keep its registration",
				"Reset stream query %q (delete its state on every partition; the query stays registered)?"),
			streamRemoveCommand("delete", "delete a stream query with its state",
				"Delete stream query %q with all its state?"),
		},
	}
}

// streamPageFlags registers --limit and --offset; what names the rows they page.
func streamPageFlags(fs *flag.FlagSet, what string) *client.StreamPage {
	p := &client.StreamPage{}
	fs.IntVar(&p.Limit, "limit", 100, "most "+what+" (1-1000)")
	fs.IntVar(&p.Offset, "offset", 0, what+" to skip")
	return p
}

// streamClient checks the page flags (a zero --limit would mean the broker's default
// to the client, not an empty page) and returns the client.
func (a *app) streamClient(p client.StreamPage) (*client.Client, error) {
	if p.Limit < 1 {
		return nil, usagef("--limit %d: must be at least 1", p.Limit)
	}
	return a.client()
}

// streamRemoveCommand builds streams reset and streams delete, which differ in the
// route, the question and the report.
func streamRemoveCommand(name, summary, question string) *command {
	return &command{
		name: name, args: "NAME", minArgs: 1, maxArgs: 1, summary: summary,
		help: "Asks for confirmation on a terminal; give --yes in scripts. Exits 3 when the\n" +
			"query does not exist.",
		setup: func(fs *flag.FlagSet) runFunc {
			yes := fs.Bool("yes", false, "do not ask for confirmation")
			alias(fs, "y", "yes")
			return func(ctx context.Context, a *app, args []string) error {
				query := args[0]
				if err := a.confirm(*yes, question, query); err != nil {
					return err
				}
				c, err := a.client()
				if err != nil {
					return err
				}
				remove := c.ResetStreamQuery
				if name == "delete" {
					remove = c.DeleteStreamQuery
				}
				r, err := remove(ctx, query)
				if err != nil {
					return fail(err, "%s stream query %q", name, query)
				}
				return a.show(r, func(t *tw) { showStreamRemoval(t, r) })
			}
		},
	}
}

// showStreamQueries renders a page of stream queries.
func showStreamQueries(t *tw, l *api.StreamQueryList) {
	rows := make([][]string, len(l.Queries))
	for i, q := range l.Queries {
		rows[i] = []string{q.Name, q.SourceQueue, deref(q.SinkQueue), itoa(q.Shards), itoa(q.StateRows), itoa(q.Cycles),
			deref(q.LastCycleAt)}
	}
	t.table([]string{"NAME", "SOURCE", "SINK", "SHARDS", "STATE ROWS", "CYCLES", "LAST CYCLE"}, rows, "No stream queries.")
	if int64(len(l.Queries)) < l.Total {
		t.line("")
		t.line("Showing %d from offset %d of %d queries.", len(l.Queries), l.Offset, l.Total)
	}
}

// showStreamQuery renders one stream query and its page of shards. A shard whose
// partition no longer exists shows as (deleted): its state outlives the partition.
func showStreamQuery(t *tw, d *api.StreamQueryDetail) {
	t.kv([][2]string{
		{"Query", t.bold(d.Name)},
		{"ID", d.QueryID},
		{"Source", d.SourceQueue},
		{"Sink", deref(d.SinkQueue)},
		{"Config hash", d.ConfigHash},
		{"Created", d.CreatedAt},
		{"Updated", d.UpdatedAt},
		{"Shards", itoa(d.Shards)},
		{"State rows", itoa(d.StateRows)},
		{"Cycles", itoa(d.Cycles)},
		{"Last cycle", deref(d.LastCycleAt)},
	})
	t.line("")
	rows := make([][]string, len(d.Partitions))
	for i, p := range d.Partitions {
		partition := t.dim("(deleted)")
		if p.Partition != nil {
			partition = *p.Partition
		}
		rows[i] = []string{partition, deref(p.Queue), itoa(p.StateRows), itoa(p.StateBytes), itoa(p.Cycles),
			deref(p.LastCycleAt), deref(p.LastStateAt), p.PartitionID}
	}
	t.table([]string{"PARTITION", "QUEUE", "STATE ROWS", "STATE BYTES", "CYCLES", "LAST CYCLE", "LAST STATE", "PARTITION ID"},
		rows, "No partitions with state or cycles.")
	if int64(len(d.Partitions)) < d.Shards {
		t.line("")
		t.line("Showing %d from offset %d of %d partitions.", len(d.Partitions), d.Offset, d.Shards)
	}
}

// showStreamRemoval reports what a reset or delete removed.
func showStreamRemoval(t *tw, r *api.StreamRemoval) {
	if r.Deleted {
		t.line("Deleted stream query %s with %d state rows on %d partitions.", r.Name, r.StateRowsDeleted, r.ShardsDeleted)
		return
	}
	t.line("Reset stream query %s: deleted %d state rows on %d partitions; the query stays registered.",
		r.Name, r.StateRowsDeleted, r.ShardsDeleted)
}
