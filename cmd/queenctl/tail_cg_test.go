package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/cli"
	"github.com/queenmq/queen/internal/client"
	"github.com/queenmq/queen/internal/testlog"
)

func TestTail(t *testing.T) {
	t.Parallel()
	b := startBroker(t)

	t.Run("FromBeginningUntilCaughtUp", func(t *testing.T) {
		t.Parallel()
		res := b.push(t, "tail.a", "", `{"n":1}`, `"two"`)
		r := b.run(t, "tail", "tail.a", "--from", "beginning", "--follow=false", "--progress")
		require.Equal(t, 0, r.code, "%s", r)
		rows := fields(r.stdout)
		require.Len(t, rows, 2)
		require.Equal(t, []string{"tail.a/Default", res[0].TransactionID, `{"n":1}`}, rows[0][1:])
		require.Equal(t, []string{"tail.a/Default", res[1].TransactionID, `"two"`}, rows[1][1:])
		require.Contains(t, r.stderr, "tail tail.a: 2 messages\n")

		// Tail consumed as a group of its own, deleted at the end: queue mode still
		// has both messages and no queenctl-tail group is left.
		require.Len(t, popAll(t, b, "tail.a").Messages, 2)
		groups := ok(t, b.run(t, "cg", "list", "--queue", "tail.a", "-o", "json"))
		require.NotContains(t, groups, "queenctl-tail-")
		require.Regexp(t, `^tail tail.a as queenctl-tail-[0-9a-f]{8}: 0 messages, waiting for more \(Ctrl-C to stop\)\n`, r.stderr)
	})

	t.Run("JSONLinesAndCount", func(t *testing.T) {
		t.Parallel()
		b.push(t, "tail.b", "", `1`, `2`, `3`)
		out := ok(t, b.run(t, "tail", "tail.b", "--from", "beginning", "--count", "2", "-o", "json"))
		ls := lines(out)
		require.Len(t, ls, 2, "--count stops after 2 messages")
		for i, l := range ls {
			var m api.Message
			require.NoError(t, json.Unmarshal([]byte(l), &m), "one JSON object per line: %q", l)
			require.Equal(t, "tail.b", m.Queue)
			require.Equal(t, []string{"1", "2"}[i], string(m.Data))
		}
	})

	t.Run("FromNowFollowsNewMessagesOnly", func(t *testing.T) {
		t.Parallel()
		b.push(t, "tail.c", "", `"old"`)
		ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, queenctlBin, "tail", "tail.c", "--group", "watcher", "--count", "1", "--poll", "2s")
		cmd.Env = []string{"QUEEN_SERVER=" + b.url, "HOME=" + t.TempDir()}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Start())
		// The group exists once tail's first pop has subscribed it "from now".
		require.Eventually(t, func() bool { return groupExists(t, b, "watcher") }, 10*time.Second, 20*time.Millisecond)
		res := b.push(t, "tail.c", "", `"new"`)
		require.NoError(t, cmd.Wait(), "stderr: %s", &stderr)
		rows := fields(stdout.String())
		require.Len(t, rows, 1, "only the message pushed after tail started: %s", &stdout)
		require.Equal(t, []string{"tail.c/Default", res[0].TransactionID, `"new"`}, rows[0][1:])
	})

	t.Run("InterruptEndsWithZero", func(t *testing.T) {
		t.Parallel()
		b.push(t, "tail.d", "", `"old"`)
		ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, queenctlBin, "tail", "tail.d", "--progress")
		cmd.Env = []string{"QUEEN_SERVER=" + b.url, "HOME=" + t.TempDir()}
		var stderr testlog.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		var group string
		require.Eventually(t, func() bool {
			m := regexp.MustCompile(`tail tail.d as (queenctl-tail-[0-9a-f]{8}): 0 messages, waiting`).FindStringSubmatch(stderr.String())
			if m != nil {
				group = m[1]
			}
			return m != nil && groupExists(t, b, group)
		}, 10*time.Second, 20*time.Millisecond, "tail's first pop subscribes its own group; stderr: %s", &stderr)
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		require.NoError(t, cmd.Wait(), "tail ends with 0 on Ctrl-C; stderr: %s", &stderr)
		require.Contains(t, stderr.String(), "tail tail.d: 0 messages\n")
		require.False(t, groupExists(t, b, group), "its group is deleted after Ctrl-C too")
	})
}

// groupExists reports whether the consumer group is known (has a cursor or a
// subscription).
func groupExists(t *testing.T, b *testBroker, group string) bool {
	t.Helper()
	var d map[string]any // {} for an unknown group
	_, err := b.client.Do(ctxT(t), "GET", "/api/v1/consumer-groups/"+group, nil, &d)
	require.NoError(t, err)
	return len(d) > 0
}

func TestConsumerGroups(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	b.push(t, "cg.q", "p1", `1`, `2`)
	b.push(t, "cg.q", "p2", `3`)
	consume := func(group string, n int) {
		got := 0
		for got < n {
			r, err := b.client.Pop(ctxT(t), client.PopOptions{Queue: "cg.q", ConsumerGroup: group, AutoAck: true, Batch: n - got, Partitions: 10})
			require.NoError(t, err)
			require.NotEmpty(t, r.Messages)
			got += len(r.Messages)
		}
	}
	consume("workers", 1)

	out := ok(t, b.run(t, "cg", "list", "--queue", "cg.q"))
	rows := fields(out)
	require.Equal(t, []string{"GROUP", "QUEUE", "PARTITIONS", "LAGGING", "LAG", "IN", "FLIGHT", "MAX", "TIME", "LAG", "STATE",
		"DELIVERY", "SUBSCRIPTION"}, rows[0])
	require.Len(t, rows, 2)
	// One cursor; both partitions lag: the one read holds one more message, the other
	// (no cursor yet) its only one.
	require.Equal(t, []string{"workers", "cg.q", "1", "2", "2"}, rows[1][:5])
	require.Contains(t, strings.Join(rows[1], " "), "every message", "a group without conflation")
	var list []api.ConsumerGroupSummary
	decode(t, ok(t, b.run(t, "cg", "ls", "-o", "json")), &list)
	require.Len(t, list, 1)
	require.Equal(t, "workers", list[0].Name)

	out = ok(t, b.run(t, "cg", "get", "workers"))
	rows = fields(out)
	require.Equal(t, []string{"QUEUE", "PARTITION", "CONSUMED", "LAG", "TIME", "LAG", "LAST", "CONSUMED", "LEASED"}, rows[0])
	require.Equal(t, []string{"cg.q", "p1", "1", "1"}, rows[1][:4])
	var detail api.ConsumerGroupDetail
	decode(t, ok(t, b.run(t, "cg", "get", "workers", "-o", "json")), &detail)
	require.Len(t, detail["cg.q"].Partitions, 1)

	var lag []api.LaggingPartition
	decode(t, ok(t, b.run(t, "cg", "lag", "workers", "-o", "json")), &lag)
	require.Len(t, lag, 1)
	require.Equal(t, "p1", lag[0].PartitionName)
	require.Equal(t, "No lagging partitions.\n", ok(t, b.run(t, "cg", "lag", "workers", "--min-lag", "1h")))

	fails(t, b.run(t, "cg", "get", "nobody"), cli.ExitNotFound,
		`queenctl cg get: consumer group "nobody": not found (no cursor or subscription on any queue)`)

	// Seek to the end: nothing left to consume.
	out = ok(t, b.run(t, "cg", "seek", "workers", "cg.q", "--to-end"))
	require.Equal(t, "Moved 2 cursors of workers on cg.q to the end.\n", out)
	require.Equal(t, "No lagging partitions.\n", ok(t, b.run(t, "cg", "lag", "workers")))
	fails(t, b.run(t, "cg", "seek", "workers", "cg.q"), cli.ExitUsage, "give exactly one of --to-end and --to")
	fails(t, b.run(t, "cg", "seek", "workers", "no.such.q", "--to-end"), cli.ExitNotFound, "Queue not found")

	// Replay from the beginning while the group consumes; --wait follows it to the end.
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, queenctlBin, "cg", "replay", "workers", "cg.q", "--wait", "--interval", "50ms", "--progress")
	cmd.Env = []string{"QUEEN_SERVER=" + b.url, "HOME=" + t.TempDir()}
	var stdout, stderr testlog.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "replay workers on cg.q: 0/3") },
		10*time.Second, 10*time.Millisecond, "progress line: %s", &stderr)
	consume("workers", 3)
	require.NoError(t, cmd.Wait(), "stderr: %s", &stderr)
	require.Equal(t, "Moved 2 cursors of workers on cg.q to 1970-01-01T00:00:00.000Z: 3 messages to consume.\nReplay done: the group has caught up.\n", stdout.String())
	require.Contains(t, stderr.String(), "replay workers on cg.q: 3 messages consumed\n")

	var rep struct {
		Seek      api.SeekResponse `json:"seek"`
		Backlog   int64            `json:"backlog"`
		Remaining int64            `json:"remaining"`
	}
	decode(t, ok(t, b.run(t, "cg", "replay", "workers", "cg.q", "--from", "beginning", "-o", "json")), &rep)
	require.Equal(t, int64(3), rep.Backlog)
	require.Equal(t, 2, rep.Seek.PartitionsUpdated)

	out = ok(t, b.run(t, "cg", "seek", "workers", "cg.q", "--partition", "p2"))
	require.Regexp(t, `^Moved the cursor of workers on cg.q/p2 to its end \(.+\)\.\n$`, out)

	fails(t, b.run(t, "cg", "delete", "workers"), cli.ExitUsage, "Refusing without --yes")
	require.Equal(t, "Deleted 2 cursors of workers on every queue, its subscription deleted.\n",
		ok(t, b.run(t, "cg", "delete", "workers", "--yes")))
	fails(t, b.run(t, "cg", "get", "workers"), cli.ExitNotFound, `consumer group "workers": not found`)
}
