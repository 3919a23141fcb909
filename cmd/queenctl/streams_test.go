package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/cli"
	"github.com/queenmq/queen/internal/client"
)

// TestStreams drives a stream query through the real routes (register, push, pop as
// the query's group, one cycle with a state upsert and the ack), then lists, shows,
// resets and deletes it with queenctl.
func TestStreams(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	const name = "orders.per_min"

	require.Equal(t, "No stream queries.\n", ok(t, b.run(t, "streams", "list")))
	queryID := b.streamQuery(t, name, "orders", "totals")
	partitionID := b.streamCycleOne(t, queryID, name, "orders")

	rows := fields(ok(t, b.run(t, "streams", "list")))
	require.Equal(t, []string{"NAME", "SOURCE", "SINK", "SHARDS", "STATE", "ROWS", "CYCLES", "LAST", "CYCLE"}, rows[0])
	require.Len(t, rows, 2)
	require.Equal(t, []string{name, "orders", "totals", "1", "1", "1"}, rows[1][:6])
	var l api.StreamQueryList
	decode(t, ok(t, b.run(t, "streams", "list", "-o", "json")), &l)
	require.Equal(t, int64(1), l.Total)
	require.False(t, l.HasMore)
	require.Len(t, l.Queries, 1)
	q := l.Queries[0]
	require.Equal(t, queryID, q.QueryID)
	require.Equal(t, [3]int64{1, 1, 1}, [3]int64{q.Shards, q.StateRows, q.Cycles}, "shards, state rows, cycles")
	require.NotNil(t, q.LastCycleAt)
	require.Equal(t, *q.LastCycleAt, rows[1][6], "the table shows the last cycle")

	out := ok(t, b.run(t, "streams", "get", name))
	require.Contains(t, out, "Query:       "+name+"\n")
	require.Contains(t, out, "Source:      orders\n")
	require.Contains(t, out, "Sink:        totals\n")
	require.Contains(t, out, "Config hash: h1\n")
	require.Contains(t, out, "State rows:  1\n")
	rows = detailTable(t, out)
	require.Equal(t, []string{"PARTITION", "QUEUE", "STATE", "ROWS", "STATE", "BYTES", "CYCLES", "LAST", "CYCLE", "LAST", "STATE",
		"PARTITION", "ID"}, rows[0])
	require.Len(t, rows, 2)
	require.Equal(t, []string{"Default", "orders", "1"}, rows[1][:3])
	require.Equal(t, "1", rows[1][4], "cycles")
	require.Equal(t, partitionID, rows[1][7])
	var d api.StreamQueryDetail
	decode(t, ok(t, b.run(t, "streams", "get", name, "-o", "json")), &d)
	require.Equal(t, queryID, d.QueryID)
	require.Len(t, d.Partitions, 1)
	p := d.Partitions[0]
	require.Equal(t, partitionID, p.PartitionID)
	require.Equal(t, "Default", orEmpty(p.Partition))
	require.Equal(t, "orders", orEmpty(p.Queue))
	require.Equal(t, [2]int64{1, 1}, [2]int64{p.StateRows, p.Cycles})
	require.Positive(t, p.StateBytes)
	require.Equal(t, strconv.FormatInt(p.StateBytes, 10), rows[1][3])
	yaml := ok(t, b.run(t, "streams", "get", name, "-o", "yaml"))
	require.Contains(t, yaml, "name: orders.per_min\n")
	require.Contains(t, yaml, "partitions:\n  - partition_id: "+partitionID+"\n")

	// Without --yes and without a terminal, nothing is removed.
	fails(t, b.run(t, "streams", "reset", name), cli.ExitUsage,
		`queenctl streams reset: Reset stream query "orders.per_min" (delete its state`, "Refusing without --yes")
	fails(t, b.run(t, "streams", "delete", name), cli.ExitUsage,
		`queenctl streams delete: Delete stream query "orders.per_min" with all its state? Refusing without --yes`)
	decode(t, ok(t, b.run(t, "streams", "list", "-o", "json")), &l)
	require.Equal(t, int64(1), l.Queries[0].StateRows, "a refused reset or delete removes nothing")

	require.Equal(t, "Reset stream query orders.per_min: deleted 1 state rows on 1 partitions; the query stays registered.\n",
		ok(t, b.run(t, "streams", "reset", name, "--yes")))
	decode(t, ok(t, b.run(t, "streams", "list", "-o", "json")), &l)
	require.Len(t, l.Queries, 1, "the query stays registered")
	q = l.Queries[0]
	require.Equal(t, queryID, q.QueryID)
	require.Equal(t, [3]int64{0, 0, 0}, [3]int64{q.Shards, q.StateRows, q.Cycles}, "shards, state rows, cycles after the reset")
	rows = fields(ok(t, b.run(t, "streams", "list")))
	require.Equal(t, []string{name, "orders", "totals", "0", "0", "0", "-"}, rows[1])
	require.Contains(t, ok(t, b.run(t, "streams", "get", name)), "\nNo partitions with state or cycles.\n")

	var r api.StreamRemoval
	decode(t, ok(t, b.run(t, "streams", "delete", name, "-y", "-o", "json")), &r)
	require.Equal(t, api.StreamRemoval{Success: true, QueryID: queryID, Name: name, Deleted: true}, r)
	r2 := b.run(t, "streams", "get", name)
	fails(t, r2, cli.ExitNotFound, `queenctl streams get: stream query "orders.per_min": stream query "orders.per_min" not found `+
		"(HTTP 404 from GET /streams/v1/queries/orders.per_min)")
	require.Empty(t, r2.stdout)
	require.Equal(t, "No stream queries.\n", ok(t, b.run(t, "streams", "list")))

	fails(t, b.run(t, "streams", "reset", "nope", "--yes"), cli.ExitNotFound,
		`queenctl streams reset: reset stream query "nope": stream query "nope" not found (HTTP 404 from POST /streams/v1/queries/nope/reset)`)
	fails(t, b.run(t, "streams", "delete", "nope", "--yes", "-o", "json"), cli.ExitNotFound,
		`queenctl streams delete: delete stream query "nope": stream query "nope" not found (HTTP 404 from DELETE /streams/v1/queries/nope)`)
	fails(t, b.run(t, "streams", "get"), cli.ExitUsage, "queenctl streams get: wrong number of arguments (0): want NAME")
}

// TestStreamsNamesPagesAndLostPartitions covers a name that is not a plain path
// segment, paging of both listings, and the state of a partition that no longer
// exists.
func TestStreamsNamesPagesAndLostPartitions(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	const odd = "ghost/by key?x=1"
	oddID := b.streamQuery(t, odd, "clicks", "")
	b.streamQuery(t, "a.first", "clicks", "")
	realPartition := b.streamCycleOne(t, oddID, odd, "clicks")
	// A cycle without an ack on a partition id that matches no partition: its state is
	// kept, as it is for a partition removed after the cycle.
	const lost = "00000000-0000-4000-8000-00000000dead"
	b.streamCycle(t, api.StreamCycleRequest{QueryID: oddID, PartitionID: lost, PushItems: []api.PushItem{},
		StateOps: []api.StreamStateOp{
			{Type: "upsert", Key: "k1", Value: json.RawMessage(`1`)},
			{Type: "upsert", Key: "k2", Value: json.RawMessage(`2`)},
		}})

	rows := fields(ok(t, b.run(t, "streams", "list")))
	require.Len(t, rows, 3)
	require.Equal(t, []string{"a.first", "clicks", "-", "0", "0", "0", "-"}, rows[1], "by name; no sink is -")
	require.Equal(t, []string{"ghost/by", "key?x=1", "clicks", "-", "2", "3", "2"}, rows[2][:7])

	var l api.StreamQueryList
	decode(t, ok(t, b.run(t, "streams", "list", "--limit", "1", "--offset", "1", "-o", "json")), &l)
	require.Equal(t, [3]int64{2, 1, 1}, [3]int64{l.Total, int64(l.Limit), int64(l.Offset)})
	require.False(t, l.HasMore)
	require.Len(t, l.Queries, 1)
	require.Equal(t, odd, l.Queries[0].Name)
	out := ok(t, b.run(t, "streams", "list", "--limit", "1"))
	require.Contains(t, out, "a.first")
	require.NotContains(t, out, "ghost")
	require.Contains(t, out, "\nShowing 1 from offset 0 of 2 queries.\n")
	fails(t, b.run(t, "streams", "list", "--limit", "0"), cli.ExitUsage, "queenctl streams list: --limit 0: must be at least 1")
	fails(t, b.run(t, "streams", "list", "--limit", "5000"), cli.ExitFailure,
		"queenctl streams list: list stream queries: limit must be between 1 and 1000 (HTTP 400 from GET /streams/v1/queries)")

	var d api.StreamQueryDetail
	decode(t, ok(t, b.run(t, "streams", "get", odd, "-o", "json")), &d)
	require.Equal(t, oddID, d.QueryID)
	require.Len(t, d.Partitions, 2)
	byID := map[string]api.StreamShardInfo{}
	for _, p := range d.Partitions {
		byID[p.PartitionID] = p
	}
	require.Contains(t, byID, lost)
	require.Nil(t, byID[lost].Partition, "the lost partition has no name")
	require.Nil(t, byID[lost].Queue)
	require.Equal(t, int64(2), byID[lost].StateRows)
	require.Equal(t, "Default", orEmpty(byID[realPartition].Partition))

	out = ok(t, b.run(t, "streams", "get", odd))
	table := detailTable(t, out)
	require.Len(t, table, 3)
	var lostRow []string
	for _, row := range table[1:] {
		if row[len(row)-1] == lost {
			lostRow = row
		}
	}
	require.Equal(t, []string{"(deleted)", "-", "2"}, lostRow[:3], "%s", out)
	require.Equal(t, "1", lostRow[4], "cycles")

	decode(t, ok(t, b.run(t, "streams", "get", odd, "--limit", "1", "-o", "json")), &d)
	require.Len(t, d.Partitions, 1)
	require.True(t, d.HasMore)
	require.Contains(t, ok(t, b.run(t, "streams", "get", odd, "--limit", "1")), "\nShowing 1 from offset 0 of 2 partitions.\n")

	require.Equal(t, "Reset stream query "+odd+": deleted 3 state rows on 2 partitions; the query stays registered.\n",
		ok(t, b.run(t, "streams", "reset", odd, "--yes")))
	require.Equal(t, "Deleted stream query "+odd+" with 0 state rows on 0 partitions.\n",
		ok(t, b.run(t, "streams", "delete", odd, "--yes")))
	fails(t, b.run(t, "streams", "get", odd), cli.ExitNotFound, "(HTTP 404 from GET /streams/v1/queries/ghost%2Fby%20key%3Fx=1)")
	decode(t, ok(t, b.run(t, "streams", "list", "-o", "json")), &l)
	require.Equal(t, int64(1), l.Total, "only a.first is left")
}

// TestStreamsHelpAndCompletion checks that the group is in the help and in the
// completion scripts.
func TestStreamsHelpAndCompletion(t *testing.T) {
	t.Parallel()
	require.Regexp(t, `\n  streams +list, show, reset and delete stream queries\n`, ok(t, runQueenctl(t, nil, "", "--help")))
	require.Contains(t, ok(t, runQueenctl(t, nil, "", "streams", "list", "--help")), "      --limit INT   most queries (1-1000) (default 100)\n")
	bash := ok(t, runQueenctl(t, nil, "", "completion", "bash"))
	require.Contains(t, bash, `"streams") opts="list get reset delete `)
	require.Contains(t, bash, `"streams|reset") path="streams reset" ;;`)
	require.Regexp(t, `"streams reset"\) opts="[^"]* -y --yes" ;;`, bash)
	require.Regexp(t, `"streams get"\) opts="[^"]* --limit [^"]* --offset `, bash)
}

// streamQuery registers a stream query (config hash h1) and returns its id.
func (b *testBroker) streamQuery(t *testing.T, name, source, sink string) string {
	t.Helper()
	var r api.StreamQueryResponse
	_, err := b.client.Do(ctxT(t), http.MethodPost, "/streams/v1/queries",
		api.StreamQueryRequest{Name: name, SourceQueue: source, SinkQueue: sink, ConfigHash: "h1"}, &r)
	require.NoError(t, err)
	require.True(t, r.Success, "%+v", r)
	require.True(t, r.Fresh, "%+v", r)
	require.NotEmpty(t, r.QueryID)
	return r.QueryID
}

// streamCycleOne pushes one message to source, pops it as the query's consumer group
// streams.<name>, and commits a cycle that upserts k1 and acks the message. It
// returns the source partition's id.
func (b *testBroker) streamCycleOne(t *testing.T, queryID, name, source string) string {
	t.Helper()
	b.push(t, source, "", `{"amount":5}`)
	group := "streams." + name
	pop, err := b.client.Pop(ctxT(t), client.PopOptions{Queue: source, ConsumerGroup: group, Batch: 10})
	require.NoError(t, err)
	require.Len(t, pop.Messages, 1)
	count := int64(1)
	res := b.streamCycle(t, api.StreamCycleRequest{QueryID: queryID, PartitionID: pop.PartitionID, ConsumerGroup: group,
		StateOps:  []api.StreamStateOp{{Type: "upsert", Key: "k1", Value: json.RawMessage(`{"n":1}`)}},
		PushItems: []api.PushItem{},
		Ack: &api.StreamAck{TransactionID: pop.Messages[0].TransactionID, LeaseID: pop.LeaseID, Status: "completed",
			Count: &count}})
	require.NotNil(t, res.AckResult)
	require.True(t, res.AckResult.Success, "%+v", res.AckResult)
	return pop.PartitionID
}

// streamCycle commits a cycle and requires it to succeed.
func (b *testBroker) streamCycle(t *testing.T, req api.StreamCycleRequest) api.StreamCycleResponse {
	t.Helper()
	var res api.StreamCycleResponse
	_, err := b.client.Do(ctxT(t), http.MethodPost, "/streams/v1/cycle", req, &res)
	require.NoError(t, err)
	require.True(t, res.Success, "%+v", res)
	require.Equal(t, len(req.StateOps), res.StateOpsApplied)
	return res
}

// detailTable returns the cells of the table after the blank line that ends a detail
// view's key-value block.
func detailTable(t *testing.T, out string) [][]string {
	t.Helper()
	_, table, found := strings.Cut(out, "\n\n")
	require.True(t, found, "no blank line in:\n%s", out)
	return fields(table)
}

// orEmpty returns *s, or "" for nil.
func orEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
