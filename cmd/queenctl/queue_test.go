package main

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/cli"
)

func TestQueue(t *testing.T) {
	t.Parallel()
	b := startBroker(t)

	t.Run("ConfigureEchoesEveryOption", func(t *testing.T) {
		t.Parallel()
		out := ok(t, b.run(t, "queue", "configure", "orders", "--lease-time", "5m", "--retry-limit", "2",
			"--retry-delay", "1500", "--priority", "7", "--namespace", "billing", "--task", "invoice"))
		require.Contains(t, out, "Configured queue orders (namespace billing, task invoice).")
		rows := fields(out)
		require.Contains(t, rows, []string{"OPTION", "VALUE"})
		require.Contains(t, rows, []string{"leaseTime", "300s"})
		require.Contains(t, rows, []string{"retryLimit", "2"})
		require.Contains(t, rows, []string{"retryDelay", "1500ms"})
		require.Contains(t, rows, []string{"priority", "7"})
		require.Contains(t, rows, []string{"encryptionEnabled", "no"})

		var r api.ConfigureResponse
		decode(t, ok(t, b.run(t, "queue", "configure", "orders", "--lease-time", "60", "-o", "json")), &r)
		require.True(t, r.Configured)
		require.Equal(t, "orders", r.Queue)
		require.Equal(t, 60, r.Options.LeaseTime)
		require.Equal(t, 2, r.Options.RetryLimit, "configure merges: retryLimit keeps its stored value")
		require.Equal(t, 7, r.Options.Priority, "… and so does priority")
		require.Equal(t, "billing", r.Namespace, "… and the namespace")

		decode(t, ok(t, b.run(t, "queue", "configure", "orders", "--lease-time", "60", "--replace", "-o", "json")), &r)
		require.Equal(t, 60, r.Options.LeaseTime)
		require.Equal(t, 3, r.Options.RetryLimit, "--replace: retryLimit is back to its default")
		require.Empty(t, r.Namespace, "--replace: the namespace not given is reset too")
	})

	t.Run("ListTableAndJSON", func(t *testing.T) {
		t.Parallel()
		b.push(t, "list.q", "", `1`, `2`)
		out := ok(t, b.run(t, "queue", "list"))
		rows := fields(out)
		require.Equal(t, []string{"QUEUE", "NAMESPACE", "TASK", "PARTITIONS", "TOTAL", "PENDING", "PROCESSING", "CREATED"}, rows[0])
		var row []string
		for _, r := range rows {
			if r[0] == "list.q" {
				row = r
			}
		}
		require.Equal(t, []string{"list.q", "list", "q", "1", "2", "2", "0"}, row[:7], "auto-created queue: namespace and task from the name")

		var l api.QueueList
		decode(t, ok(t, b.run(t, "queue", "list", "-o", "json", "--namespace", "list")), &l)
		require.Len(t, l.Queues, 1)
		require.Equal(t, "list.q", l.Queues[0].Name)
		require.Equal(t, 2, l.Queues[0].Messages.Pending)

		yaml := ok(t, b.run(t, "queue", "list", "-o", "yaml", "--namespace", "list"))
		require.Contains(t, yaml, "queues:\n  - id: ")
		require.Contains(t, yaml, "    name: list.q\n")
		require.Contains(t, yaml, "    messages:\n      total: 2\n      pending: 2\n")
	})

	t.Run("GetTableAndJSON", func(t *testing.T) {
		t.Parallel()
		b.push(t, "get.q", "p1", `{"a":1}`)
		b.push(t, "get.q", "p2", `{"a":2}`, `{"a":3}`)
		out := ok(t, b.run(t, "queue", "get", "get.q"))
		require.Contains(t, out, "Queue:     get.q\n")
		require.Contains(t, out, "Messages:  3 total, 3 pending, 0 processing, 0 completed, 0 failed, 0 dead-letter, in queue mode\n")
		rows := fields(out)
		require.Contains(t, rows, []string{"PARTITION", "TOTAL", "PENDING", "PROCESSING", "COMPLETED", "FAILED", "DEAD-LETTER", "OLDEST", "NEWEST"})
		var p2 []string
		for _, r := range rows {
			if r[0] == "p2" {
				p2 = r
			}
		}
		require.Equal(t, []string{"p2", "2", "2", "0", "0", "0", "0"}, p2[:7])

		var d api.QueueDetail
		decode(t, ok(t, b.run(t, "queue", "get", "get.q", "-o", "json")), &d)
		require.Equal(t, "get.q", d.Name)
		require.Len(t, d.Partitions, 2)
		require.Equal(t, 3, d.Totals.Total)
	})

	t.Run("GetShowsWhetherTTLAndRetryDelayAreEnforced", func(t *testing.T) {
		t.Parallel()
		// As an upstream broker leaves a queue: ttl 3600, retry_delay 1000 and a
		// max_queue_size stored, none applied.
		conn, err := pgx.Connect(ctxT(t), b.dbURL)
		require.NoError(t, err)
		defer conn.Close(ctxT(t))
		_, err = conn.Exec(ctxT(t), `INSERT INTO queen.queues (name, namespace, task, ttl, retry_delay, max_queue_size)
			VALUES ('adopted.q', '', '', 3600, 1000, 50)`)
		require.NoError(t, err)
		rows := fields(ok(t, b.run(t, "queue", "get", "adopted.q")))
		require.Contains(t, rows, []string{"OPTION", "VALUE"})
		require.Contains(t, rows, []string{"ttl", "3600s", "(stored", "by", "upstream,", "not", "enforced)"})
		require.Contains(t, rows, []string{"retryDelay", "1000ms", "(stored", "by", "upstream,", "not", "enforced)"})
		require.Contains(t, rows, []string{"maxSize", "50", "(stored", "by", "upstream,", "not", "enforced)"})

		ok(t, b.run(t, "queue", "configure", "adopted.q", "--ttl", "10m"))
		rows = fields(ok(t, b.run(t, "queue", "get", "adopted.q")))
		require.Contains(t, rows, []string{"ttl", "600s", "(enforced)"})
		require.Contains(t, rows, []string{"retryDelay", "1000ms", "(stored", "by", "upstream,", "not", "enforced)"},
			"a merge that does not name retryDelay leaves it as the upstream broker stored it")

		ok(t, b.run(t, "queue", "configure", "adopted.q", "--ttl", "10m", "--replace"))
		rows = fields(ok(t, b.run(t, "queue", "get", "adopted.q")))
		require.Contains(t, rows, []string{"retryDelay", "0ms"}, "--replace resets it to queen's default, 0 (off)")

		var d api.QueueDetail
		decode(t, ok(t, b.run(t, "queue", "get", "adopted.q", "-o", "json")), &d)
		require.NotNil(t, d.Options)
		require.Equal(t, 600, d.Options.TTL)
		require.Equal(t, &api.EnforcedOptions{TTL: true, RetryDelay: true, MaxSize: true}, d.EnforcedOptions,
			"--replace reset maxSize to queen's default, 0 (off)")
	})

	t.Run("GetUnknownQueueIs404", func(t *testing.T) {
		t.Parallel()
		r := b.run(t, "queue", "get", "no-such-queue")
		fails(t, r, cli.ExitNotFound, `queenctl queue get: queue "no-such-queue": Queue not found (HTTP 404 from GET /api/v1/resources/queues/no-such-queue)`)
		require.Empty(t, r.stdout)

		r = b.run(t, "queue", "get", "no-such-queue", "-o", "json")
		require.Equal(t, cli.ExitNotFound, r.code, "%s", r)
		require.Empty(t, r.stdout, "nothing on stdout for a failure, whatever the format")
	})

	t.Run("DeleteNeedsConfirmation", func(t *testing.T) {
		t.Parallel()
		b.push(t, "del.q", "", `1`)
		r := b.run(t, "queue", "delete", "del.q")
		fails(t, r, cli.ExitUsage, `Delete queue "del.q" with all its messages? Refusing without --yes`)
		require.NotContains(t, r.stderr, "--help", "a refusal is not a command-line mistake")

		require.Equal(t, "Deleted queue del.q.\n", ok(t, b.run(t, "queue", "delete", "del.q", "--yes")))
		r = b.run(t, "queue", "delete", "-y", "del.q")
		require.Equal(t, "Queue del.q did not exist.\n", r.stdout)
		fails(t, r, cli.ExitNotFound, `queue "del.q" does not exist`)

		var d api.QueueDeleteResponse
		decode(t, ok(t, b.run(t, "queue", "rm", "del.q", "--yes", "--ignore-not-found", "-o", "json")), &d)
		require.Equal(t, api.QueueDeleteResponse{Deleted: true, Queue: "del.q", Existed: false}, d)
	})

	t.Run("ConfigureRefusedOptionIsExit1", func(t *testing.T) {
		t.Parallel()
		r := b.run(t, "queue", "configure", "enc.q", "--encryption")
		fails(t, r, cli.ExitFailure, `queenctl queue configure: configure queue "enc.q": `, "HTTP 400")
		require.True(t, strings.Contains(r.stderr, "QUEEN_ENCRYPTION_KEY"), "%s", r)
	})
}
