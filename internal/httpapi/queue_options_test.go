package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdoptedUpstreamQueueOptions: upstream stores ttl 3600 and retry_delay 1000 on
// every queue and applies neither. On a database adopted from upstream those values are
// shown but not applied until the queue is configured through queen.
func TestAdoptedUpstreamQueueOptions(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	const q = "up-orders"
	ctx := t.Context()

	// The row an upstream broker leaves: its column defaults, no record of queen's configure.
	_, err := b.db.Exec(ctx, `INSERT INTO queen.queues (name, namespace, task, ttl, retry_delay)
		VALUES ($1, 'up', '', 3600, 1000)`, q)
	require.NoError(t, err)
	pid := b.pushed(t, q, "p1", "old", `1`)
	// Produced two hours ago: older than the stored ttl.
	_, err = b.db.Exec(ctx, `UPDATE queen.messages SET created_at = created_at - interval '2 hours'
		WHERE partition_id = $1`, pid)
	require.NoError(t, err)
	_, err = b.db.Exec(ctx, `UPDATE queen.partition_lookup
		SET last_message_created_at = last_message_created_at - interval '2 hours' WHERE partition_id = $1`, pid)
	require.NoError(t, err)

	detail := func(t *testing.T) (opts, enforced map[string]any) {
		t.Helper()
		d := b.list(t, "/api/v1/resources/queues/"+q)
		return d["options"].(map[string]any), d["enforcedOptions"].(map[string]any)
	}
	enforcedBoth := func(ttl, retryDelay bool) map[string]any {
		return map[string]any{"ttl": ttl, "retryDelay": retryDelay, "maxSize": true}
	}
	queueModeLease := func(t *testing.T) *time.Time {
		t.Helper()
		var lease *time.Time
		require.NoError(t, b.db.QueryRow(ctx, `SELECT lease_expires_at FROM queen.partition_consumers
			WHERE partition_id = $1 AND consumer_group = '__QUEUE_MODE__'`, pid).Scan(&lease))
		return lease
	}

	opts, enforced := detail(t)
	require.Equal(t, []any{3600.0, 1000.0}, []any{opts["ttl"], opts["retryDelay"]}, "the stored values are shown")
	require.Equal(t, enforcedBoth(false, false), enforced)

	// The two-hour-old message is delivered: the stored ttl is not applied.
	msgs := cgPop(t, b.testBundle, q+"?batch=10")
	require.Equal(t, []any{"old"}, field(msgs, "transactionId"))
	require.Equal(t, 1.0, cgSummary(t, b.testBundle, "__QUEUE_MODE__", q)["totalLag"], "an old message is lag, not expired")

	// A failed ack releases the partition at once: the stored retry_delay is not applied.
	b.ack(t, msgs[0], "", "failed", "boom")
	require.Nil(t, queueModeLease(t), "no retry delay holds the partition")
	again := cgPop(t, b.testBundle, q)
	require.Equal(t, []any{"old"}, field(again, "transactionId"), "redelivered by the next pop")

	// Configured through queen, ttl and retryDelay are applied.
	r := b.post(t, "/api/v1/configure", `{"queue":"up-orders","options":{"ttl":600,"retryDelay":60000}}`)
	requireStatus(t, http.StatusOK, r)
	opts, enforced = detail(t)
	require.Equal(t, []any{600.0, 60000.0}, []any{opts["ttl"], opts["retryDelay"]})
	require.Equal(t, enforcedBoth(true, true), enforced)
	require.Nil(t, cgPop(t, b.testBundle, q+"?consumerGroup=g-ttl&batch=10"), "older than the ttl: not delivered")
	require.Equal(t, 0.0, cgSummary(t, b.testBundle, "__QUEUE_MODE__", q)["totalLag"], "expired messages are not lag")

	b.pushed(t, q, "p1", "new", `2`)
	fresh := cgPop(t, b.testBundle, q+"?consumerGroup=g-delay&batch=10")
	require.Equal(t, []any{"new"}, field(fresh, "transactionId"), "only the message within the ttl")
	b.ack(t, fresh[0], "g-delay", "failed", "boom")
	var held bool
	require.NoError(t, b.db.QueryRow(ctx, `SELECT lease_expires_at > now() + interval '30 seconds'
		FROM queen.partition_consumers WHERE partition_id = $1 AND consumer_group = 'g-delay'`, pid).Scan(&held))
	require.True(t, held, "the retry delay holds the partition for about a minute")
	require.Nil(t, cgPop(t, b.testBundle, q+"?consumerGroup=g-delay"), "not redelivered before retryDelay")

	// An upstream broker's configure (after a rollback) writes the columns, never the
	// record: values that differ from what queen recorded are not applied.
	_, err = b.db.Exec(ctx, `UPDATE queen.queues SET ttl = 3600, retry_delay = 1000 WHERE name = $1`, q)
	require.NoError(t, err)
	_, enforced = detail(t)
	require.Equal(t, enforcedBoth(false, false), enforced)
	require.Equal(t, []any{"old", "new"}, field(cgPop(t, b.testBundle, q+"?consumerGroup=g-rollback&batch=10"), "transactionId"))

	// A replacing configure through queen that leaves them out resets them to queen's
	// default, 0.
	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure", `{"queue":"up-orders","mode":"replace"}`))
	opts, enforced = detail(t)
	require.Equal(t, []any{0.0, 0.0}, []any{opts["ttl"], opts["retryDelay"]})
	require.Equal(t, enforcedBoth(true, true), enforced, "0 is off, whoever stored it")
	require.Equal(t, []any{"old", "new"}, field(cgPop(t, b.testBundle, q+"?consumerGroup=g-reset&batch=10"), "transactionId"))
}

// TestAdoptedUpstreamMaxSize: upstream stores max_queue_size and applies it only when
// its file buffer drains, never to a live push. On an adopted database a stored maxSize
// refuses nothing until the queue is configured through queen.
func TestAdoptedUpstreamMaxSize(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	const q = "up-capped"
	_, err := b.db.Exec(t.Context(), `INSERT INTO queen.queues (name, namespace, task, ttl, retry_delay, max_queue_size)
		VALUES ($1, '', '', 3600, 1000, 2)`, q)
	require.NoError(t, err)
	d := b.list(t, "/api/v1/resources/queues/"+q)
	require.Equal(t, 2.0, d["options"].(map[string]any)["maxSize"], "the stored value is shown")
	require.Equal(t, false, d["enforcedOptions"].(map[string]any)["maxSize"])

	push3 := func(prefix string) []any {
		r := b.post(t, "/api/v1/push", `{"items":[{"queue":"up-capped","transactionId":"`+prefix+`1"},`+
			`{"queue":"up-capped","transactionId":"`+prefix+`2"},{"queue":"up-capped","transactionId":"`+prefix+`3"}]}`)
		requireStatus(t, http.StatusCreated, r)
		return field(r.array(t), "status")
	}
	require.Equal(t, []any{"queued", "queued", "queued"}, push3("a"), "upstream's maxSize is not applied")

	// Configured through queen, it is: the queue already holds 3.
	b.configure(t, q, `{"maxSize":4}`)
	require.Equal(t, true, b.list(t, "/api/v1/resources/queues/"+q)["enforcedOptions"].(map[string]any)["maxSize"])
	require.Equal(t, []any{"queued", "failed", "failed"}, push3("b"))
}

// TestQueenQueueOptionsEnforced: queues queen creates or configures have their ttl and
// retryDelay applied as stored.
func TestQueenQueueOptionsEnforced(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)

	t.Run("CreatedByPushHasNothingToApply", func(t *testing.T) {
		t.Parallel()
		b.pushed(t, "opt-pushed", "", "", `1`)
		d := b.list(t, "/api/v1/resources/queues/opt-pushed")
		opts := d["options"].(map[string]any)
		require.Equal(t, []any{0.0, 0.0}, []any{opts["ttl"], opts["retryDelay"]})
		require.Equal(t, map[string]any{"ttl": true, "retryDelay": true, "maxSize": true}, d["enforcedOptions"])
	})

	t.Run("ExpiredPartitionsDoNotHideAFreshOne", func(t *testing.T) {
		t.Parallel()
		// 30 partitions whose messages all expired come before the fresh one: the pop
		// drops them on its way and still reaches it (it gave up after 20).
		const q = "opt-ttl-many"
		b.configure(t, q, `{"ttl":600}`)
		require.Nil(t, cgPop(t, b.testBundle, q), "registers queue mode as a wildcard consumer")
		items := make([]map[string]any, 30)
		for i := range items {
			items[i] = map[string]any{"queue": q, "partition": "x" + itoa(i), "payload": i}
		}
		requireStatus(t, http.StatusCreated, b.post(t, "/api/v1/push", mustJSON(t, map[string]any{"items": items})))
		_, err := b.db.Exec(t.Context(), `UPDATE queen.messages m SET created_at = m.created_at - interval '2 hours'
			FROM queen.partitions p JOIN queen.queues qq ON qq.id = p.queue_id
			WHERE m.partition_id = p.id AND qq.name = $1`, q)
		require.NoError(t, err)
		_, err = b.db.Exec(t.Context(), `UPDATE queen.partition_lookup
			SET last_message_created_at = last_message_created_at - interval '2 hours' WHERE queue_name = $1`, q)
		require.NoError(t, err)
		b.pushed(t, q, "fresh", "fresh-1", `1`)
		require.Equal(t, []any{"fresh-1"}, field(cgPop(t, b.testBundle, q), "transactionId"))
	})

	t.Run("ConfiguredTTLExpiresOldMessages", func(t *testing.T) {
		t.Parallel()
		b.configure(t, "opt-ttl", `{"ttl":600}`)
		pid := b.pushed(t, "opt-ttl", "p1", "old", `1`)
		_, err := b.db.Exec(t.Context(), `UPDATE queen.messages SET created_at = created_at - interval '2 hours'
			WHERE partition_id = $1`, pid)
		require.NoError(t, err)
		_, err = b.db.Exec(t.Context(), `UPDATE queen.partition_lookup
			SET last_message_created_at = last_message_created_at - interval '2 hours' WHERE partition_id = $1`, pid)
		require.NoError(t, err)
		b.pushed(t, "opt-ttl", "p1", "new", `2`)
		require.Equal(t, []any{"new"}, field(cgPop(t, b.testBundle, "opt-ttl?batch=10"), "transactionId"))
		d := b.list(t, "/api/v1/resources/queues/opt-ttl")
		require.Equal(t, 600.0, d["options"].(map[string]any)["ttl"])
		require.Equal(t, map[string]any{"ttl": true, "retryDelay": true, "maxSize": true}, d["enforcedOptions"])
	})
}
