package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/cli"
)

func TestPush(t *testing.T) {
	t.Parallel()
	b := startBroker(t)

	t.Run("ArgumentsJSONOrString", func(t *testing.T) {
		t.Parallel()
		out := ok(t, b.run(t, "push", "args.q", `{"id":1}`, "hello", "42"))
		rows := fields(out)
		require.Equal(t, []string{"STATUS", "TRANSACTION", "ID", "MESSAGE", "ID", "PARTITION", "ID"}, rows[0])
		require.Len(t, rows, 4)
		for _, r := range rows[1:] {
			require.Equal(t, "queued", r[0])
		}
		r := popAll(t, b, "args.q")
		require.Equal(t, []string{`{"id":1}`, `"hello"`, `42`}, payloads(r))
	})

	t.Run("StringFlagAndDuplicate", func(t *testing.T) {
		t.Parallel()
		var res []api.PushResult
		decode(t, ok(t, b.run(t, "push", "dup.q", "--string", "--transaction-id", "tx-1", "-p", "p1", "42", "-o", "json")), &res)
		require.Len(t, res, 1)
		require.Equal(t, api.PushStatusQueued, res[0].Status)
		require.Equal(t, "tx-1", res[0].ID())

		out := ok(t, b.run(t, "push", "dup.q", "--transaction-id", "tx-1", "-p", "p1", "43"))
		require.Equal(t, "duplicate", fields(out)[1][0], "a duplicate is not a failure: %s", out)
		require.Equal(t, "tx-1", fields(out)[1][1])
		require.Equal(t, res[0].MessageID, fields(out)[1][2], "a duplicate names the stored message")
		r := popAll(t, b, "dup.q")
		require.Equal(t, []string{`"42"`}, payloads(r))
	})

	t.Run("FileWithProgress", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "events.ndjson")
		var sb strings.Builder
		for i := range 1200 {
			fmt.Fprintf(&sb, "{\"n\":%d}\n", i)
			if i == 10 {
				sb.WriteString("\n   \n") // blank lines are skipped
			}
		}
		require.NoError(t, os.WriteFile(path, []byte(sb.String()), 0o600))
		r := b.run(t, "push", "file.q", "-f", path, "--batch", "500", "--progress")
		require.Equal(t, 0, r.code, "%s", r)
		require.Regexp(t, `^Pushed 1200 messages from .*events.ndjson to file.q/Default in [0-9.]+m?s: 1200 queued, 0 duplicate, 0 failed.\n$`, r.stdout)
		require.Regexp(t, `(?m)^\s*\d+% pushed 500 messages \(500 queued, 0 duplicate, 0 failed\), \d+ msg/s$`, r.stderr,
			"--progress prints the progress line even off a terminal")

		d, err := b.client.GetQueue(ctxT(t), "file.q")
		require.NoError(t, err)
		require.Equal(t, 1200, d.Totals.Total)
	})

	t.Run("StdinLinesAsJSON", func(t *testing.T) {
		t.Parallel()
		r := b.runIn(t, "{\"a\":1}\nplain text\r\n\n[1,2]\n", "push", "stdin.q", "-o", "json")
		require.Equal(t, 0, r.code, "%s", r)
		var res []api.PushResult
		decode(t, r.stdout, &res)
		require.Len(t, res, 3)
		require.Empty(t, r.stderr, "no progress off a terminal without --progress")
		require.Equal(t, []string{`{"a":1}`, `"plain text"`, `[1,2]`}, payloads(popAll(t, b, "stdin.q")))
	})

	t.Run("StrictJSONNamesTheLine", func(t *testing.T) {
		t.Parallel()
		r := b.runIn(t, "{\"a\":1}\n{broken\n", "push", "strict.q", "--json", "-f", "-")
		fails(t, r, cli.ExitUsage, "queenctl push: standard input line 2: not valid JSON (drop --json to send it as a string): {broken")
		d, err := b.client.GetQueue(ctxT(t), "strict.q")
		require.ErrorContains(t, err, "not found", "nothing was sent: %v", d)
	})

	t.Run("UsageErrors", func(t *testing.T) {
		t.Parallel()
		fails(t, b.run(t, "push"), cli.ExitUsage, "queenctl push: wrong number of arguments (0): want QUEUE [PAYLOAD...]")
		fails(t, b.run(t, "push", "q", "a", "b", "--transaction-id", "x"), cli.ExitUsage, "--transaction-id needs exactly one payload")
		fails(t, b.run(t, "push", "q", "a", "-f", "x"), cli.ExitUsage, "not both")
		fails(t, b.run(t, "push", "q", "-f", "/no/such/file"), cli.ExitUsage, "--file: open /no/such/file")
	})

	t.Run("PushMaintenanceIsUnavailableOrBuffered", func(t *testing.T) {
		// Its own broker: maintenance is cluster-wide.
		t.Parallel()
		m := startBroker(t)
		ok(t, m.run(t, "maintenance", "on", "push"))
		r := m.run(t, "push", "maint.q", "x")
		if r.code == 0 {
			// A broker with a spool takes the push and stores it later.
			require.Equal(t, "buffered", fields(r.stdout)[1][0], "%s", r)
		} else {
			fails(t, r, cli.ExitUnavailable, "queenctl push: push to maint.q: push maintenance mode is on", "HTTP 503")
		}
		ok(t, m.run(t, "maintenance", "off", "push"))
		ok(t, m.run(t, "push", "maint.q", "x"))
	})
}

func TestPopAckLease(t *testing.T) {
	t.Parallel()
	b := startBroker(t)

	t.Run("PopTableThenAck", func(t *testing.T) {
		t.Parallel()
		b.push(t, "pop.q", "", `{"n":1}`, `{"n":2}`)
		out := ok(t, b.run(t, "pop", "pop.q", "-n", "2"))
		require.Contains(t, out, "Queue:          pop.q\nConsumer group: __QUEUE_MODE__\nLease:          ")
		rows := fields(out)
		require.Equal(t, []string{"PARTITION", "PARTITION", "ID", "TRANSACTION", "ID", "CREATED", "DATA"}, rows[3])
		require.Len(t, rows, 6)
		require.Equal(t, `{"n":1}`, rows[4][4])
		require.Equal(t, `{"n":2}`, rows[5][4])
		lease := rows[2][1]
		partitionID, txID := rows[4][1], rows[4][2]

		out = ok(t, b.run(t, "ack", partitionID, txID, "--lease", lease))
		require.Equal(t, "Acknowledged "+txID+" in pop.q/Default as completed.\n", out)

		// The second message is still pending: a wrong lease is refused. (The first is
		// below the cursor now: acking it again is a noop whatever the lease.)
		var res []api.AckResult
		txID2 := rows[5][2]
		r := b.run(t, "ack", partitionID, txID2, "--lease", "01900000-0000-7000-8000-000000000000", "-o", "json")
		decode(t, r.stdout, &res)
		require.False(t, res[0].Success)
		fails(t, r, cli.ExitFailure, "queenctl ack: ack "+txID2+": Invalid or expired lease")

		r = b.run(t, "ack", partitionID, "no-such-tx")
		const unresolvable = "unresolvable: transaction not in the ack window (hash purged or never pushed); " +
			"if leased, the message redelivers"
		require.Equal(t, "Not acknowledged: "+unresolvable+".\n", r.stdout)
		fails(t, r, cli.ExitNotFound, "queenctl ack: ack no-such-tx: "+unresolvable)
	})

	t.Run("PopJSONAndLeaseExtend", func(t *testing.T) {
		t.Parallel()
		b.push(t, "lease.q", "", `"x"`)
		var p api.PopResponse
		decode(t, ok(t, b.run(t, "pop", "lease.q", "-o", "json")), &p)
		require.Len(t, p.Messages, 1)
		require.Equal(t, `"x"`, string(p.Messages[0].Data))
		require.NotEmpty(t, p.LeaseID)

		out := ok(t, b.run(t, "lease", "extend", p.LeaseID, "--seconds", "10m"))
		require.Regexp(t, `^Lease `+p.LeaseID+` now expires at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\.\n$`, out)
		var ext []api.LeaseExtendResult
		decode(t, ok(t, b.run(t, "lease", "extend", p.LeaseID, "-o", "json")), &ext)
		require.True(t, ext[0].Success)

		r := b.run(t, "lease", "extend", "01900000-0000-7000-8000-000000000000")
		fails(t, r, cli.ExitNotFound, "queenctl lease extend: extend lease 01900000-0000-7000-8000-000000000000: Lease not found")

		ok(t, b.run(t, "ack", p.Messages[0].PartitionID, p.Messages[0].TransactionID, "--status", "failed", "--error", "boom"))
	})

	t.Run("EmptyPop", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "No messages.\n", ok(t, b.run(t, "pop", "empty.q")))
		require.JSONEq(t, `{"messages":[]}`, ok(t, b.run(t, "pop", "empty.q", "-o", "json")))
		out := ok(t, b.run(t, "pop", "empty.q", "--wait", "--wait-timeout", "200ms"))
		require.Equal(t, "No messages.\n", out)
	})

	t.Run("AutoAckGroupAndNamespace", func(t *testing.T) {
		t.Parallel()
		b.push(t, "ns1.jobs", "", `1`)
		var p api.PopResponse
		decode(t, ok(t, b.run(t, "pop", "--namespace", "ns1", "--auto-ack", "-g", "g1", "-o", "json")), &p)
		require.Len(t, p.Messages, 1)
		require.Equal(t, "ns1.jobs", p.Queue)
		require.Equal(t, "g1", p.ConsumerGroup)
		require.Empty(t, p.LeaseID, "auto-ack takes no lease")
		fails(t, b.run(t, "pop"), cli.ExitUsage, "give a QUEUE, or --namespace and/or --task")
		fails(t, b.run(t, "pop", "q", "--wait", "--wait-timeout", "0"), cli.ExitUsage,
			"--wait-timeout must be at least 1ms (without --wait a pop does not wait)")
	})

	t.Run("AckUsage", func(t *testing.T) {
		t.Parallel()
		fails(t, b.run(t, "ack", "p", "t", "--status", "done"), cli.ExitUsage, `--status "done": want completed, failed, dlq or retry`)
		fails(t, b.run(t, "ack", "p"), cli.ExitUsage, "want PARTITION_ID TRANSACTION_ID")
	})
}

func TestTx(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	b.push(t, "tx.in", "", `{"step":1}`)
	p, err := b.client.Pop(ctxT(t), popOpts("tx.in"))
	require.NoError(t, err)
	m := p.Messages[0]

	out := ok(t, b.run(t, "tx", "--ack", m.PartitionID+"/"+m.TransactionID, "--push", `tx.out={"step":2}`, "--push", "tx.out/p9=text"))
	require.Regexp(t, `^Transaction \S+ committed\.\n`, out)
	rows := fields(out)
	require.Equal(t, []string{"#", "TYPE", "RESULT", "TRANSACTION", "ID", "DETAIL"}, rows[1])
	require.Equal(t, []string{"0", "ack", "ok", m.TransactionID, "-"}, rows[2])
	require.Equal(t, []string{"1", "push", "ok"}, rows[3][:3])
	require.Equal(t, "tx.out", rows[3][4])
	require.Equal(t, []string{`{"step":2}`, `"text"`}, payloads(popAll(t, b, "tx.out")))

	file := filepath.Join(t.TempDir(), "tx.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"operations":[{"type":"ack","partitionId":"`+m.PartitionID+
		`","transactionId":"missing"},{"type":"push","items":[{"queue":"tx.out","payload":1}]}]}`), 0o600))
	r := b.run(t, "tx", "-f", file, "-o", "json")
	var resp api.TransactionResponse
	decode(t, r.stdout, &resp)
	require.False(t, resp.Success)
	fails(t, r, cli.ExitNotFound, "queenctl tx: transaction: rolled back: QTXN ack references unknown transactionId; transaction rolled back")
	require.Empty(t, popAll(t, b, "tx.out").Messages, "rolled back: nothing pushed")

	fails(t, b.run(t, "tx"), cli.ExitUsage, "no operations: give --ack, --push or --file")
	fails(t, b.run(t, "tx", "--ack", "nopair"), cli.ExitUsage, "want PARTITION_ID/TRANSACTION_ID")
}
