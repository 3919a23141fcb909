package daemon_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// TestHazardNewOnlyActsAsAll: upstream documents
// subscriptionMode=new-only as an alias of new but only recognises "new", so a
// new-only group reads the whole history. It must skip it like "new".
func TestHazardNewOnlyActsAsAll(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)
	const q = "new-only"
	push(t, tb, q, "", `"old-1"`, `"old-2"`)

	control, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, ConsumerGroup: "control", SubscriptionMode: api.SubscriptionModeAll, AutoAck: true})
	require.NoError(t, err)
	require.Equal(t, []string{`"old-1"`}, payloads(t, control.Messages), "the history is there for an 'all' group")

	first, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, ConsumerGroup: "fresh", SubscriptionMode: "new-only", Batch: 10, AutoAck: true})
	require.NoError(t, err)
	require.Empty(t, first.Messages, "a new-only group skips the history")

	push(t, tb, q, "", `"new-1"`)
	next, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, ConsumerGroup: "fresh", SubscriptionMode: "new-only", Batch: 10, AutoAck: true})
	require.NoError(t, err)
	require.Equal(t, []string{`"new-1"`}, payloads(t, next.Messages), "and gets what comes after its first pop")
}

// TestHazardDelayedPartitionStarvation: with delayedProcessing,
// upstream claims a partition whose messages are not due yet, gets nothing from it
// and, with partitions=1, ends the pop there: due messages of partitions later in
// scan order starve. Here partition A (scanned first: older head) holds only an
// undue message and B a due one; a wildcard pop must return B's. The delay is an
// hour and b-due is made due by moving its creation two hours back, as waiting is no
// option: a-undue and b-undue stay undue for an hour, which no machine's slowness
// eats.
func TestHazardDelayedPartitionStarvation(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)
	const q = "delayed"
	const delay = 3600 // seconds
	configure(t, tb, q, api.QueueOptions{DelayedProcessing: api.Int(delay)})
	push(t, tb, q, "B", `"b-due"`)
	sqlExec(t, tb, `
		UPDATE queen.messages SET created_at = created_at - interval '2 hours'
		 WHERE partition_id IN (SELECT p.id FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
		                         WHERE q.name = $1 AND p.name = 'B')`, q)
	probe, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, Partition: "B", ConsumerGroup: "probe"})
	require.NoError(t, err)
	require.Equal(t, []string{`"b-due"`}, payloads(t, probe.Messages), "b-due is due, as seen by a probe group of its own")

	push(t, tb, q, "A", `"a-undue"`)
	push(t, tb, q, "B", `"b-undue"`)
	got, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, Batch: 10, Partitions: 1})
	require.NoError(t, err)
	require.Equal(t, []string{`"b-due"`}, payloads(t, got.Messages), "the due message of B, not an empty answer because of A")
	require.Equal(t, 1, got.PartitionsClaimed)
}

// TestHazardWindowBufferStranding: with windowBuffer above 2
// minutes, upstream's empty scans push the group's watermark forward until a
// window-gated partition's lookup row is more than 2 minutes older than it, and the
// partition is never a candidate again. Waiting minutes is not an option in a test,
// so the database is put in the state those minutes leave: the message, its lookup
// row and its ready row 3 minutes old, and an empty-scan watermark of now. Once the window has
// passed, a wildcard pop must deliver the message.
func TestHazardWindowBufferStranding(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)
	const q = "window"
	configure(t, tb, q, api.QueueOptions{WindowBuffer: api.Int(150)})
	push(t, tb, q, "P", `"held"`)

	held, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q})
	require.NoError(t, err)
	require.Empty(t, held.Messages, "the window holds the partition back")

	sqlExec(t, tb, `
		WITH p AS (SELECT p.id FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
		           WHERE q.name = $1 AND p.name = 'P'),
		     m AS (UPDATE queen.messages SET created_at = created_at - interval '3 minutes'
		           WHERE partition_id IN (SELECT id FROM p) RETURNING 1),
		     l AS (UPDATE queen.partition_lookup
		           SET last_message_created_at = last_message_created_at - interval '3 minutes',
		               updated_at = updated_at - interval '3 minutes'
		           WHERE partition_id IN (SELECT id FROM p) RETURNING 1),
		     r AS (UPDATE queen.partition_ready SET ready_at = ready_at - interval '3 minutes'
		           WHERE partition_id IN (SELECT id FROM p) RETURNING 1)
		INSERT INTO queen.consumer_watermarks (queue_name, consumer_group, last_empty_scan_at, updated_at)
		VALUES ($1, $2, now(), now())
		ON CONFLICT (queue_name, consumer_group) DO UPDATE SET last_empty_scan_at = now(), updated_at = now()`,
		q, api.QueueModeGroup)

	got, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q})
	require.NoError(t, err)
	require.Equal(t, []string{`"held"`}, payloads(t, got.Messages), "the window has passed: the partition is served")
}

// TestHazardBatchZeroOrNegative: upstream does not validate
// batch; a negative limit is an SQL error that fails every merged pop. batch < 1 is
// a 400 naming the parameter, on both routes, and pops keep working.
func TestHazardBatchZeroOrNegative(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)
	const q = "batch"
	push(t, tb, q, "", `"m"`)
	for _, path := range []string{"/api/v1/pop/queue/" + q, "/api/v1/pop/queue/" + q + "/partition/Default"} {
		for _, batch := range []string{"0", "-1", "-100"} {
			status, body := tb.raw(t, http.MethodGet, path+"?batch="+batch, "")
			require.Equal(t, http.StatusBadRequest, status, "%s batch=%s: %s", path, batch, body)
			require.Contains(t, errorBody(t, body).Error, "batch")
		}
	}
	got, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q})
	require.NoError(t, err)
	require.Equal(t, []string{`"m"`}, payloads(t, got.Messages), "a valid pop still works")
}

// TestHazardLongPollTimeoutCapped stands in for upstream's "long-poll forgotten after
// 120 s", which would take minutes: the broker enforces every
// pop's own deadline and caps timeout at QUEEN_MAX_POP_TIMEOUT_MS. With a 500 ms cap,
// a pop asking for 10 minutes is answered empty, and not before the cap. The test
// waits 2 minutes for the answer: 240 times the cap, so no slowness of the machine
// fails a capped pop, and a fifth of the uncapped wait, so an uncapped pop fails.
func TestHazardLongPollTimeoutCapped(t *testing.T) {
	t.Parallel()

	tb := startBroker(t, "QUEEN_MAX_POP_TIMEOUT_MS=500", "DEFAULT_TIMEOUT=500")
	const q = "capped"
	configure(t, tb, q, api.QueueOptions{})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	answer := tb.rawAsync(ctx, http.MethodGet, "/api/v1/pop/queue/"+q+"?wait=true&timeout=600000")
	timer := time.NewTimer(2 * time.Minute)
	defer timer.Stop()
	select {
	case a := <-answer:
		require.NoError(t, a.err)
		require.Equal(t, http.StatusNoContent, a.status, "%s", a.body)
		require.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond, "the pop waited for the capped timeout")
	case <-timer.C:
		require.FailNow(t, "the 10 min long-poll was not capped", "no answer within 2 min with QUEEN_MAX_POP_TIMEOUT_MS=500")
	}
}
