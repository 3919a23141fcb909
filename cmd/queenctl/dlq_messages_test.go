package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/cli"
)

func TestDLQ(t *testing.T) {
	t.Parallel()
	b := startBroker(t)

	require.Equal(t, "The dead-letter queue is empty.\n", ok(t, b.run(t, "dlq", "list")))
	b.deadLetter(t, "dlq.a", "bad input", `{"n":1}`, `{"n":2}`)
	b.deadLetter(t, "dlq.b", "other", `{"n":3}`)

	out := ok(t, b.run(t, "dlq", "list", "--queue", "dlq.a"))
	rows := fields(out)
	require.Equal(t, []string{"FAILED", "QUEUE/PARTITION", "GROUP", "PARTITION", "ID", "TRANSACTION", "ID", "RETRIES", "ERROR", "DATA"}, rows[0])
	require.Len(t, rows, 3)
	require.Equal(t, []string{"dlq.a/Default", "__QUEUE_MODE__"}, rows[1][1:3])
	require.Equal(t, []string{"0", "bad", "input", `{"n":2}`}, rows[1][5:], "newest failure first")

	var l api.DLQList
	decode(t, ok(t, b.run(t, "dlq", "list", "-o", "json", "--limit", "1")), &l)
	require.Equal(t, int64(3), l.Total)
	require.Len(t, l.Messages, 1)
	out = ok(t, b.run(t, "dlq", "list", "--limit", "1"))
	require.Contains(t, out, "\nShowing 1 from offset 0 of 3 entries.\n")

	decode(t, ok(t, b.run(t, "dlq", "list", "--queue", "dlq.a", "-o", "json")), &l)
	first := l.Messages[1] // {"n":1}
	require.JSONEq(t, `{"n":1}`, string(first.Data))

	t.Run("RetryOne", func(t *testing.T) {
		t.Parallel()
		var res []struct {
			PartitionID, TransactionID, Queue, NewTransactionID, NewMessageID, PushStatus string
			Deleted                                                                       bool
		}
		decode(t, ok(t, b.run(t, "dlq", "retry", first.PartitionID, first.TransactionID, "-o", "json")), &res)
		require.Len(t, res, 1)
		require.Equal(t, "dlq-retry-"+first.ID, res[0].NewTransactionID)
		require.Equal(t, api.PushStatusQueued, res[0].PushStatus)
		require.True(t, res[0].Deleted)

		p := popAll(t, b, "dlq.a")
		require.Equal(t, []string{`{"n":1}`}, payloads(p), "the payload is back in its queue")
		require.Equal(t, "dlq-retry-"+first.ID, p.Messages[0].TransactionID)
		_, err := b.client.Do(ctxT(t), http.MethodGet, "/api/v1/messages/"+first.PartitionID+"/"+first.TransactionID, nil, nil)
		require.ErrorContains(t, err, "Message not found", "the dead-lettered message is gone")

		r := b.run(t, "dlq", "retry", first.PartitionID, first.TransactionID)
		fails(t, r, cli.ExitNotFound, "queenctl dlq retry: message "+first.TransactionID+": Message not found (HTTP 404")
	})

	t.Run("RetryRefusesLiveMessage", func(t *testing.T) {
		t.Parallel()
		res := b.push(t, "dlq.live", "", `1`)
		d := messageDetail(t, b, res[0])
		r := b.run(t, "dlq", "retry", d.PartitionID, d.TransactionID)
		fails(t, r, cli.ExitFailure, "queenctl dlq retry: message "+d.TransactionID+": not dead-lettered (status pending); use --force")
	})

	t.Run("DeleteAll", func(t *testing.T) {
		t.Parallel()
		fails(t, b.run(t, "dlq", "delete", "--all", "--queue", "dlq.b"), cli.ExitUsage,
			"Delete 1 dead-lettered messages? Refusing without --yes")
		fails(t, b.run(t, "dlq", "delete"), cli.ExitUsage, "give PARTITION_ID TRANSACTION_ID, or --all")
		r := b.run(t, "dlq", "delete", "--all", "--queue", "dlq.b", "--yes", "--progress")
		require.Equal(t, 0, r.code, "%s", r)
		require.Contains(t, r.stderr, "dlq delete: 1 messages, 0 failed\n", "the final progress line")
		rows := fields(r.stdout)
		require.Equal(t, []string{"QUEUE/PARTITION", "TRANSACTION", "ID", "NEW", "TRANSACTION", "ID", "RESULT"}, rows[0])
		require.Equal(t, []string{"dlq.b/Default", "-", "delete", "done"}, []string{rows[1][0], rows[1][2], rows[1][3], rows[1][4]})
		var after api.DLQList
		decode(t, ok(t, b.run(t, "dlq", "list", "--queue", "dlq.b", "-o", "json")), &after)
		require.Empty(t, after.Messages)
		require.Equal(t, int64(0), after.Total)
	})

	t.Run("RetryAll", func(t *testing.T) {
		t.Parallel()
		b.deadLetter(t, "dlq.c", "x", `"a"`, `"b"`)
		out := ok(t, b.run(t, "dlq", "retry", "--all", "--queue", "dlq.c", "-y"))
		require.Len(t, fields(out), 3)
		require.ElementsMatch(t, []string{`"a"`, `"b"`}, payloads(popAll(t, b, "dlq.c")))
	})
}

// messageDetail fetches a pushed message's detail.
func messageDetail(t *testing.T, b *testBroker, r api.PushResult) api.MessageDetail {
	t.Helper()
	var d api.MessageDetail
	_, err := b.client.Do(ctxT(t), http.MethodGet, "/api/v1/messages/"+r.PartitionID+"/"+r.ID(), nil, &d)
	require.NoError(t, err)
	return d
}

func TestMessagesAndTraces(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	res := b.push(t, "msg.q", "p1", `{"order":42}`)
	m := messageDetail(t, b, res[0])

	out := ok(t, b.run(t, "messages", "list", "--queue", "msg.q"))
	rows := fields(out)
	require.Equal(t, []string{"CREATED", "QUEUE/PARTITION", "PARTITION", "ID", "TRANSACTION", "ID", "STATUS", "CONSUMED", "BY"}, rows[0])
	require.Equal(t, []string{"msg.q/p1", m.PartitionID, m.TransactionID, "pending", "0/0"}, rows[1][1:])
	var l api.MessageList
	decode(t, ok(t, b.run(t, "messages", "list", "--queue", "msg.q", "--status", "pending", "-o", "json")), &l)
	require.Equal(t, int64(1), l.Total)

	out = ok(t, b.run(t, "messages", "get", m.PartitionID, m.TransactionID))
	require.Contains(t, out, "Queue:        msg.q/p1\n")
	require.Contains(t, out, "Status:       pending\n")
	require.Contains(t, out, "Payload:\n  {\n    \"order\": 42\n  }\n")
	var d api.MessageDetail
	decode(t, ok(t, b.run(t, "messages", "get", m.PartitionID, m.TransactionID, "-o", "json")), &d)
	require.JSONEq(t, `{"order":42}`, string(d.Payload))
	fails(t, b.run(t, "messages", "get", m.PartitionID, "nope"), cli.ExitNotFound, "queenctl messages get: message nope: Message not found (HTTP 404")

	// Traces are recorded by consumers (POST /api/v1/traces); queenctl reads them.
	trace := api.TraceRequest{TransactionID: m.TransactionID, PartitionID: m.PartitionID, TraceNames: []string{"order-flow"},
		EventType: "info", Data: json.RawMessage(`{"text":"started"}`)}
	_, err := b.client.Do(ctxT(t), http.MethodPost, "/api/v1/traces", trace, nil)
	require.NoError(t, err)

	rows = fields(ok(t, b.run(t, "traces", "get", m.PartitionID, m.TransactionID)))
	require.Equal(t, []string{"CREATED", "EVENT", "GROUP", "NAMES", "DATA"}, rows[0])
	require.Equal(t, []string{"info", "__QUEUE_MODE__", "order-flow", `{"text":"started"}`}, rows[1][1:])
	rows = fields(ok(t, b.run(t, "traces", "by-name", "order-flow")))
	require.Equal(t, []string{"msg.q/p1", m.TransactionID, "info", `{"text":"started"}`}, rows[1][1:])
	var names api.TraceNameList
	decode(t, ok(t, b.run(t, "traces", "names", "-o", "json")), &names)
	require.Len(t, names.TraceNames, 1)
	require.Equal(t, "order-flow", names.TraceNames[0].TraceName)
	require.Equal(t, "No traces.\n", ok(t, b.run(t, "traces", "by-name", "nothing")))

	require.Equal(t, "Deleted message "+m.TransactionID+".\n", ok(t, b.run(t, "messages", "delete", m.PartitionID, m.TransactionID)))
	r := b.run(t, "messages", "delete", m.PartitionID, m.TransactionID)
	fails(t, r, cli.ExitNotFound, "queenctl messages delete: delete message "+m.TransactionID+": Message not found")
}
