package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/testwait"
)

// The answers of the Queen 1.x brokers to acks and nacks (docs/api.md,
// "Acknowledgement"): each subtest fails on the broker that answered as the 0.15 line.

const (
	unresolvable = "unresolvable: transaction not in the ack window (hash purged or never pushed); " +
		"if leased, the message redelivers"
	alreadyCommitted = "already committed: the cursor moved past this message before this ack"
)

// pushN pushes n messages q-1..q-n (transaction ids prefix-1..prefix-n) to the Default
// partition of queueName, in order.
func (b *testBundle) pushN(t *testing.T, queueName, prefix string, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		b.pushed(t, queueName, "", fmt.Sprintf("%s-%d", prefix, i), `{}`)
	}
}

// ackItems posts one /ack/batch of items (each {transactionId, partitionId, leaseId?,
// status?}) for group and returns the answer.
func (b *testBundle) ackItems(t *testing.T, group string, items ...map[string]any) []map[string]any {
	t.Helper()
	body := map[string]any{"acknowledgments": items}
	if group != "" {
		body["consumerGroup"] = group
	}
	r := b.post(t, "/api/v1/ack/batch", mustJSON(t, body))
	requireStatus(t, http.StatusOK, r)
	res := r.array(t)
	require.Len(t, res, len(items))
	for _, item := range res {
		require.Equal(t, ackKeys, keys(item), "every item carries noop")
	}
	return res
}

// item is the ack of popped message m with status ("" = none sent).
func item(m map[string]any, status string) map[string]any {
	a := map[string]any{"transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"]}
	if status != "" {
		a["status"] = status
	}
	return a
}

// waitPop pops the Default partition of queueName for group until it answers, and
// checks that it answered n messages.
func waitPop(t *testing.T, b *testBundle, queueName, group string, n int) []map[string]any {
	t.Helper()
	var msgs []map[string]any
	testwait.For(t, 10*time.Second, 50*time.Millisecond, func() error {
		if msgs = b.popUpTo(t, queueName, "Default", group, 10); msgs == nil {
			return errors.New("nothing to pop yet")
		}
		return nil
	})
	require.Len(t, msgs, n)
	return msgs
}

// txIDs are the transaction ids of messages.
func txIDs(msgs []map[string]any) []any { return field(msgs, "transactionId") }

func TestAck1x(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})

	t.Run("DeadLetterReleasesTheLease", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ name, options, status string }{
			{"dlq", "", "dlq"},
			{"FailedPastRetryLimit", `{"retryLimit":0}`, "failed"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				q := "ack1x-dl-" + tc.name
				b.configure(t, q, tc.options)
				b.pushN(t, q, q, 5)
				msgs := b.popPartition(t, q, "Default", "", 5)
				res := b.ackItems(t, "", item(msgs[0], tc.status))
				require.Equal(t, true, res[0]["success"], "%v", res[0])
				require.Nil(t, res[0]["error"])
				require.Equal(t, true, res[0]["dlq"])
				require.Equal(t, true, res[0]["leaseReleased"])
				require.Equal(t, false, res[0]["noop"])
				// The rest of the batch is claimable by the very next pop, at once.
				rest := b.popUpTo(t, q, "Default", "", 10)
				require.Equal(t, []any{q + "-2", q + "-3", q + "-4", q + "-5"}, txIDs(rest))
				require.Equal(t, []any{q + "-1"}, b.dlqTransactions(t, "queue="+q))
			})
		}
	})

	t.Run("TheRestOfTheBatchUnderTheLeaseADeadLetterReleased", func(t *testing.T) {
		t.Parallel()
		// A Queen 0.15 consumer acks the rest of its batch, one by one, under the pop's
		// lease after a nack dead-lettered its first message: until another pop claims
		// the partition, those acks count (as acks without a lease).
		q := "ack1x-dl-rest"
		b.configure(t, q, `{"retryLimit":0}`)
		b.pushN(t, q, q, 3)
		msgs := b.popPartition(t, q, "Default", "", 3)
		res := b.ackItems(t, "", item(msgs[0], "failed"))
		require.Equal(t, true, res[0]["dlq"], "%v", res[0])
		require.Equal(t, true, res[0]["leaseReleased"], "%v", res[0])
		for _, m := range msgs[1:] {
			res = b.ackItems(t, "", item(m, "completed"))
			require.Equal(t, true, res[0]["success"], "%v", res[0])
			require.Nil(t, res[0]["error"], "%v", res[0])
		}
		require.Nil(t, b.popUpTo(t, q, "Default", "", 10), "nothing left to deliver")
		require.Equal(t, []any{q + "-1"}, b.dlqTransactions(t, "queue="+q))
		g := b.list(t, "/api/v1/consumer-groups/__QUEUE_MODE__")[q].(map[string]any)["partitions"].([]any)[0]
		require.EqualValues(t, 2, g.(map[string]any)["totalConsumed"], "a dead letter is not counted as consumed")

		// Once another pop claimed the partition, the released lease is stale.
		q = "ack1x-dl-claimed"
		b.configure(t, q, `{"retryLimit":0}`)
		b.pushN(t, q, q, 3)
		msgs = b.popPartition(t, q, "Default", "", 3)
		b.ackItems(t, "", item(msgs[0], "dlq"))
		again := b.popUpTo(t, q, "Default", "", 10)
		require.Equal(t, []any{q + "-2", q + "-3"}, txIDs(again), "the rest is claimable at once")
		res = b.ackItems(t, "", item(msgs[1], "completed"))
		require.Equal(t, false, res[0]["success"], "%v", res[0])
		require.Equal(t, "Invalid or expired lease", res[0]["error"])
	})

	t.Run("DeadLetterWithoutACursorSkipsNothing", func(t *testing.T) {
		t.Parallel()
		// A group that never popped the partition (or whose cursor was deleted) nacks
		// its second message: the dead letter is filed, but no cursor is created at
		// that message, so the group still gets the first one.
		for _, status := range []string{"dlq", "failed"} {
			t.Run(status, func(t *testing.T) {
				t.Parallel()
				q := "ack1x-nocursor-" + status
				b.pushN(t, q, q, 3)
				msgs := b.popPartition(t, q, "Default", "other", 3) // learns the partition id
				nack := map[string]any{"transactionId": msgs[1]["transactionId"], "partitionId": msgs[1]["partitionId"],
					"status": status}
				res := b.ackItems(t, "gx", nack)
				require.Equal(t, true, res[0]["success"], "%v", res[0])
				require.Equal(t, true, res[0]["dlq"], "%v", res[0])
				require.Equal(t, []any{q + "-2"}, b.dlqTransactions(t, "queue="+q+"&consumerGroup=gx"))
				require.Equal(t, []any{q + "-1", q + "-2", q + "-3"}, txIDs(b.popUpTo(t, q, "Default", "gx", 10)))
			})
		}
	})

	t.Run("FailedAfterADeadLetterInTheSameCall", func(t *testing.T) {
		t.Parallel()
		// [q-1 failed: budget spent, dead-lettered; q-2 failed] in one call: q-2's
		// failure counts as if it came right after, in the next call: it charges the
		// fresh budget and holds the partition for retryDelay.
		const q = "ack1x-failed-after-dl"
		b.configure(t, q, `{"retryLimit":1,"retryDelay":1000}`)
		b.pushN(t, q, q, 3)
		msgs := b.popPartition(t, q, "Default", "", 3)
		require.Equal(t, true, b.ackItems(t, "", item(msgs[0], "failed"))[0]["success"]) // budget 1 of 1
		msgs = waitPop(t, b, q, "", 3)
		require.Equal(t, []any{q + "-1", q + "-2", q + "-3"}, txIDs(msgs))
		res := b.ackItems(t, "", item(msgs[0], "failed"), item(msgs[1], "failed"))
		require.Equal(t, []any{true, true}, field(res, "success"), "%v", res)
		require.Equal(t, []any{true, false}, field(res, "dlq"))
		require.Equal(t, []any{true, true}, field(res, "leaseReleased"))
		require.Equal(t, []any{q + "-1"}, b.dlqTransactions(t, "queue="+q))
		// Held for retryDelay, then q-2 comes back with one retry charged.
		require.Nil(t, b.popUpTo(t, q, "Default", "", 10), "redelivered before retryDelay")
		msgs = waitPop(t, b, q, "", 2)
		require.Equal(t, []any{q + "-2", q + "-3"}, txIDs(msgs))
		require.Equal(t, float64(1), msgs[0]["retryCount"], "%v", msgs[0])
		// The budget (1) is spent: the next failure dead-letters.
		res = b.ackItems(t, "", item(msgs[0], "failed"))
		require.Equal(t, true, res[0]["dlq"], "%v", res[0])
	})

	t.Run("OneMessageNamedTwiceTakesTheStrongestStatus", func(t *testing.T) {
		t.Parallel()
		// The same message named twice in one call: dlq beats failed beats retry beats
		// completed, whatever their order in the call; the other item finds its effect.
		for _, tc := range []struct {
			name, first, second string
			dlq                 bool
		}{
			{"RetryThenDlq", "retry", "dlq", true},
			{"DlqThenRetry", "dlq", "retry", true},
			{"CompletedThenFailed", "completed", "failed", false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				q := "ack1x-twice-" + tc.name
				b.configure(t, q, `{"retryLimit":5}`)
				b.pushN(t, q, q, 2)
				msgs := b.popPartition(t, q, "Default", "", 2)
				res := b.ackItems(t, "", item(msgs[0], tc.first), item(msgs[0], tc.second))
				if tc.dlq {
					require.Contains(t, field(res, "dlq"), true, "%v", res)
					require.Equal(t, []any{q + "-1"}, b.dlqTransactions(t, "queue="+q))
					require.Equal(t, []any{q + "-2"}, txIDs(b.popUpTo(t, q, "Default", "", 10)), "dead-lettered, not retried")
					return
				}
				require.NotContains(t, field(res, "dlq"), true, "%v", res)
				require.Empty(t, b.dlqTransactions(t, "queue="+q))
				again := b.popUpTo(t, q, "Default", "", 10)
				require.Equal(t, []any{q + "-1", q + "-2"}, txIDs(again), "the failure wins: redelivered, not completed")
				require.Equal(t, float64(1), again[0]["retryCount"], "%v", again[0])
			})
		}
	})

	t.Run("NacksAfterADeadLetterInTheSameCall", func(t *testing.T) {
		t.Parallel()
		// After a dead letter the later items of the call still act, in order, within
		// the leased batch, as the next call under the same lease would: a dlq
		// dead-letters, a completion moves the cursor (and ends the batch, releasing the
		// lease), and an item past the batch's lease is refused.
		const q = "ack1x-nacks-after-dl"
		b.pushN(t, q, q, 5)
		msgs := b.popPartition(t, q, "Default", "g", 3)
		beyond := item(msgs[2], "dlq")
		beyond["transactionId"] = q + "-4"
		res := b.ackItems(t, "g", item(msgs[0], "dlq"), item(msgs[1], "dlq"), item(msgs[2], "completed"), beyond)
		require.Equal(t, []any{true, true, true, false}, field(res, "success"), "%v", res)
		require.Equal(t, []any{true, true, false, false}, field(res, "dlq"))
		require.NotEmpty(t, res[3]["error"], "q-4 was never leased: %v", res[3])
		require.ElementsMatch(t, []any{q + "-1", q + "-2"}, b.dlqTransactions(t, "queue="+q))
		// The lease is released at once: q-4 is next.
		require.Equal(t, []any{q + "-4", q + "-5"}, txIDs(b.popUpTo(t, q, "Default", "g", 10)))
	})

	t.Run("NackAtOrBelowTheCursorIsAlreadyCommitted", func(t *testing.T) {
		t.Parallel()
		const q = "ack1x-committed"
		b.pushN(t, q, q, 3)
		msgs := b.popPartition(t, q, "Default", "g", 2)
		res := b.ackItems(t, "g", item(msgs[0], "completed"), item(msgs[1], "completed"))
		require.Equal(t, []any{true, true}, field(res, "success"))
		require.Equal(t, []any{false, false}, field(res, "noop"))

		// Below the cursor now: the nacks can do nothing and say so; a completed is a noop.
		for _, status := range []string{"failed", "retry", "dlq", "nack"} {
			res = b.ackItems(t, "g", item(msgs[0], status))
			require.Equal(t, false, res[0]["success"], "status %s: %v", status, res[0])
			require.Equal(t, alreadyCommitted, res[0]["error"], "status %s", status)
			require.Equal(t, false, res[0]["dlq"])
		}
		for _, status := range []string{"completed", ""} {
			res = b.ackItems(t, "g", item(msgs[1], status))
			require.Equal(t, true, res[0]["success"], "status %q: %v", status, res[0])
			require.Nil(t, res[0]["error"])
			require.Equal(t, true, res[0]["noop"])
		}
		// Nothing moved: no dead letter, and the group goes on at q-3.
		require.Empty(t, b.dlqTransactions(t, "queue="+q))
		require.Equal(t, []any{q + "-3"}, txIDs(b.popUpTo(t, q, "Default", "g", 10)))
	})

	t.Run("NoopLeavesTheLeaseAlone", func(t *testing.T) {
		t.Parallel()
		const q = "ack1x-noop-lease"
		b.pushN(t, q, q, 3)
		first := b.popPartition(t, q, "Default", "", 1)
		require.Equal(t, true, b.ackItems(t, "", item(first[0], ""))[0]["success"])
		msgs := b.popPartition(t, q, "Default", "", 2) // q-2, q-3 under a new lease
		stale := item(first[0], "completed")
		stale["leaseId"] = msgs[0]["leaseId"]
		res := b.ackItems(t, "", stale)
		require.Equal(t, true, res[0]["noop"], "%v", res[0])
		require.Equal(t, false, res[0]["leaseReleased"])
		// Still leased: nobody else gets q-2.
		require.Nil(t, b.popUpTo(t, q, "Default", "", 10))
		res = b.ackItems(t, "", item(msgs[0], ""), item(msgs[1], ""))
		require.Equal(t, []any{true, true}, field(res, "success"))
	})

	t.Run("UnknownTransactionIsUnresolvable", func(t *testing.T) {
		t.Parallel()
		const q = "ack1x-unresolvable"
		b.pushN(t, q, q, 3)
		msgs := b.popPartition(t, q, "Default", "", 1) // leases q-1 only
		ghost := item(msgs[0], "failed")
		ghost["transactionId"] = "never-pushed"
		beyond := item(msgs[0], "completed")
		beyond["transactionId"] = q + "-3" // pushed, but above the leased batch's end
		res := b.ackItems(t, "", ghost, beyond)
		for i, r := range res {
			require.Equal(t, false, r["success"], "item %d: %v", i, r)
			require.Equal(t, unresolvable, r["error"], "item %d", i)
		}
		// Neither moved the cursor nor changed the lease: the lease still holds q-1 and
		// its ack releases it; q-2 comes next.
		require.Nil(t, b.popUpTo(t, q, "Default", "", 10))
		res = b.ackItems(t, "", item(msgs[0], ""))
		require.Equal(t, true, res[0]["success"], "%v", res[0])
		require.Equal(t, true, res[0]["leaseReleased"])
		require.Equal(t, []any{q + "-2", q + "-3"}, txIDs(b.popUpTo(t, q, "Default", "", 10)))
	})

	t.Run("BeyondTheLeaseWithoutALeaseIdIsUnresolvable", func(t *testing.T) {
		t.Parallel()
		// An ack without a leaseId (as a Queen 0.15 client sends one when it knows no
		// lease) of a message past another consumer's live batch resolves nowhere: it
		// must neither skip the holder's unacked messages and the one nobody was given
		// (q-4) nor end the holder's lease. Within the batch it still completes.
		const q = "ack1x-beyond-nolease"
		b.pushN(t, q, q, 5)
		msgs := b.popPartition(t, q, "Default", "", 3) // leases q-1..q-3
		beyond := item(msgs[0], "completed")
		delete(beyond, "leaseId")
		beyond["transactionId"] = q + "-5"
		res := b.ackItems(t, "", beyond)
		require.Equal(t, false, res[0]["success"], "%v", res[0])
		require.Equal(t, unresolvable, res[0]["error"])
		r := b.post(t, "/api/v1/ack", mustJSON(t, beyond))
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, unresolvable, r.array(t)[0]["error"], "the single-ack route")
		require.Nil(t, b.popUpTo(t, q, "Default", "", 10), "the lease still holds")

		within := item(msgs[0], "")
		delete(within, "leaseId")
		res = b.ackItems(t, "", within)
		require.Equal(t, true, res[0]["success"], "%v", res[0])
		res = b.ackItems(t, "", item(msgs[1], ""), item(msgs[2], ""))
		require.Equal(t, []any{true, true}, field(res, "success"))
		require.Equal(t, []any{q + "-4", q + "-5"}, txIDs(b.popUpTo(t, q, "Default", "", 10)))
	})

	t.Run("StatusNormalisation", func(t *testing.T) {
		t.Parallel()
		// acked and ok complete (the 0.15 line refused them); FAILED, COMPLETED, nack
		// and "" are failed nacks (case-sensitive): the lease goes, the message comes back.
		for i, status := range []string{"acked", "ok", "success"} {
			q := fmt.Sprintf("ack1x-norm-ok-%d", i)
			b.pushN(t, q, q, 2)
			msgs := b.popPartition(t, q, "Default", "", 1)
			res := b.ackItems(t, "", item(msgs[0], status))
			require.Equal(t, true, res[0]["success"], "status %s: %v", status, res[0])
			require.Equal(t, true, res[0]["leaseReleased"])
			require.Equal(t, []any{q + "-2"}, txIDs(b.popUpTo(t, q, "Default", "", 10)), "status %s", status)
		}
		// An empty status is a nack too: only an absent or null one completes.
		for i, status := range []string{"FAILED", "COMPLETED", "nack", ""} {
			q := fmt.Sprintf("ack1x-norm-failed-%d", i)
			b.pushN(t, q, q, 2)
			msgs := b.popPartition(t, q, "Default", "", 1)
			a := item(msgs[0], "")
			a["status"] = status
			res := b.ackItems(t, "", a)
			require.Equal(t, true, res[0]["success"], "status %s: %v", status, res[0])
			require.Equal(t, true, res[0]["leaseReleased"])
			require.Equal(t, false, res[0]["dlq"])
			require.Equal(t, []any{q + "-1", q + "-2"}, txIDs(b.popUpTo(t, q, "Default", "", 10)), "status %s", status)
		}
		q := "ack1x-norm-empty-single"
		b.pushN(t, q, q, 2)
		msgs := b.popPartition(t, q, "Default", "", 1)
		a := item(msgs[0], "")
		a["status"] = ""
		r := b.post(t, "/api/v1/ack", mustJSON(t, a))
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, []any{q + "-1", q + "-2"}, txIDs(b.popUpTo(t, q, "Default", "", 10)), "POST /ack with status \"\"")
	})

	t.Run("CursorNeverPassesTheLowestNack", func(t *testing.T) {
		t.Parallel()
		for _, nack := range []string{"retry", "failed", "dlq"} {
			q := "ack1x-lowest-" + nack
			b.pushN(t, q, q, 4)
			msgs := b.popPartition(t, q, "Default", "", 4)
			res := b.ackItems(t, "", item(msgs[0], ""), item(msgs[3], ""), item(msgs[1], nack))
			require.Equal(t, true, res[0]["success"])
			require.Equal(t, true, res[2]["success"])
			require.Equal(t, nack == "dlq", res[2]["dlq"])
			if nack == "dlq" {
				// A dead letter resolves its message, so it blocks nothing: the completion
				// above it moves the cursor, as the next call would.
				require.Equal(t, true, res[1]["success"], "%s: a completion above a dead letter: %v", nack, res[1])
				require.Empty(t, b.popUpTo(t, q, "Default", "", 10), nack)
				continue
			}
			require.Equal(t, false, res[1]["success"], "%s: a completion above the nack: %v", nack, res[1])
			require.Equal(t, []any{q + "-2", q + "-3", q + "-4"}, txIDs(b.popUpTo(t, q, "Default", "", 10)), nack)
		}
	})
}

// TestAck1xGapBelowTheLowestNackCompletes: a call that nacks the second message of a
// batch and completes the third, not naming the first, completes the first implicitly:
// the cursor moves to the highest completion but never past the lowest nack, and the
// messages below that nack that the call left out are consumed with it.
func TestAck1xGapBelowTheLowestNackCompletes(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	for _, nack := range []string{"retry", "failed"} {
		t.Run(nack, func(t *testing.T) {
			t.Parallel()
			q := "ack1x-gap-" + nack
			b.pushN(t, q, q, 4)
			msgs := b.popPartition(t, q, "Default", "", 4)
			res := b.ackItems(t, "", item(msgs[1], nack), item(msgs[2], ""))
			require.Equal(t, true, res[0]["success"], "the nack: %v", res[0])
			require.Equal(t, false, res[1]["success"], "a completion above the nack: %v", res[1])
			require.Equal(t, []any{q + "-2", q + "-3", q + "-4"}, txIDs(b.popUpTo(t, q, "Default", "", 10)),
				"the first message, below the nack and not named, was consumed")
		})
	}
	t.Run("NotForACompletionBeyondTheLeasedBatch", func(t *testing.T) {
		t.Parallel()
		q := "ack1x-gap-beyond"
		b.pushN(t, q, q, 4)
		msgs := b.popPartition(t, q, "Default", "", 2)
		beyond := item(msgs[0], "")
		beyond["transactionId"] = q + "-3"
		res := b.ackItems(t, "", item(msgs[1], "failed"), beyond)
		require.Equal(t, true, res[0]["success"], "the nack: %v", res[0])
		require.Equal(t, false, res[1]["success"], "beyond the batch: %v", res[1])
		require.Equal(t, []any{q + "-1", q + "-2", q + "-3", q + "-4"}, txIDs(b.popUpTo(t, q, "Default", "", 10)),
			"a completion that resolved nowhere completes nothing below the nack")
	})
}

func TestTransactionAcks1x(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})

	// tx posts one transaction of ack operations for group and returns its answer.
	tx := func(t *testing.T, group string, acks ...map[string]any) map[string]any {
		t.Helper()
		ops := make([]any, len(acks))
		for i, a := range acks {
			op := map[string]any{"type": "ack", "consumerGroup": group}
			for k, v := range a {
				if k != "leaseId" { // clients never put the lease in the operation
					op[k] = v
				}
			}
			ops[i] = op
		}
		r := b.post(t, "/api/v1/transaction", mustJSON(t, map[string]any{"operations": ops}))
		requireStatus(t, http.StatusOK, r)
		return r.object(t)
	}
	result := func(m map[string]any, i int) map[string]any { return m["results"].([]any)[i].(map[string]any) }

	t.Run("Retry", func(t *testing.T) {
		t.Parallel()
		const q = "tx1x-retry"
		b.pushN(t, q, q, 3)
		msgs := b.popPartition(t, q, "Default", "g", 3)
		m := tx(t, "g", item(msgs[0], "retry"))
		require.Equal(t, true, m["success"], "%v", m)
		require.Equal(t, false, result(m, 0)["dlq"])
		// The lease is gone and the cursor stayed: everything redelivers now.
		require.Equal(t, []any{q + "-1", q + "-2", q + "-3"}, txIDs(b.popUpTo(t, q, "Default", "g", 10)))
	})

	t.Run("DLQ", func(t *testing.T) {
		t.Parallel()
		const q = "tx1x-dlq"
		b.pushN(t, q, q, 3)
		msgs := b.popPartition(t, q, "Default", "g", 3)
		m := tx(t, "g", item(msgs[0], "dlq"))
		require.Equal(t, true, m["success"], "%v", m)
		require.Equal(t, true, result(m, 0)["dlq"])
		require.Equal(t, []any{q + "-2", q + "-3"}, txIDs(b.popUpTo(t, q, "Default", "g", 10)))
		require.Equal(t, []any{q + "-1"}, b.dlqTransactions(t, "queue="+q))
	})

	t.Run("FailedChargesTheBudget", func(t *testing.T) {
		t.Parallel()
		const q = "tx1x-failed"
		b.configure(t, q, `{"retryLimit":1}`)
		b.pushN(t, q, q, 2)
		msgs := b.popPartition(t, q, "Default", "g", 2)
		m := tx(t, "g", item(msgs[0], "failed"))
		require.Equal(t, true, m["success"], "%v", m)
		require.Equal(t, false, result(m, 0)["dlq"], "within the budget: a retry")
		require.Empty(t, b.dlqTransactions(t, "queue="+q))
		msgs = b.popPartition(t, q, "Default", "g", 2)
		m = tx(t, "g", item(msgs[0], "failed"))
		require.Equal(t, true, result(m, 0)["dlq"], "the budget is spent: a dead letter")
		require.Equal(t, []any{q + "-2"}, txIDs(b.popUpTo(t, q, "Default", "g", 10)))
	})

	t.Run("FailedAfterADeadLetter", func(t *testing.T) {
		t.Parallel()
		// As on /ack/batch: the failed op after the dead letter charges the fresh
		// budget and holds the partition for retryDelay.
		const q = "tx1x-failed-after-dl"
		b.configure(t, q, `{"retryLimit":1,"retryDelay":1000}`)
		b.pushN(t, q, q, 3)
		msgs := b.popPartition(t, q, "Default", "g", 3)
		require.Equal(t, true, b.ackItems(t, "g", item(msgs[0], "failed"))[0]["success"]) // budget 1 of 1
		msgs = waitPop(t, b, q, "g", 3)
		m := tx(t, "g", item(msgs[0], "failed"), item(msgs[1], "failed"))
		require.Equal(t, true, m["success"], "%v", m)
		require.Equal(t, true, result(m, 0)["dlq"])
		require.Equal(t, false, result(m, 1)["dlq"])
		require.Nil(t, b.popUpTo(t, q, "Default", "g", 10), "redelivered before retryDelay")
		msgs = waitPop(t, b, q, "g", 2)
		require.Equal(t, []any{q + "-2", q + "-3"}, txIDs(msgs))
		require.Equal(t, float64(1), msgs[0]["retryCount"], "%v", msgs[0])
	})

	t.Run("AtOrBelowTheCursorIsTolerated", func(t *testing.T) {
		t.Parallel()
		const q = "tx1x-below"
		b.pushN(t, q, q, 2)
		msgs := b.popPartition(t, q, "Default", "g", 1)
		require.Equal(t, true, b.ackItems(t, "g", item(msgs[0], ""))[0]["success"])
		m := tx(t, "g", item(msgs[0], "completed"), item(msgs[0], "dlq"))
		require.Equal(t, true, m["success"], "no rollback: %v", m)
		require.Empty(t, b.dlqTransactions(t, "queue="+q))
		require.Equal(t, []any{q + "-2"}, txIDs(b.popUpTo(t, q, "Default", "g", 10)))
	})

	t.Run("AStaleLeaseRollsBackEvenBelowTheCursor", func(t *testing.T) {
		t.Parallel()
		// The consumer lost its lease and another consumer completed the message: a
		// transaction naming the old lease must not commit its pushes on that ack.
		const q = "tx1x-stale-below"
		b.pushN(t, q, q, 1)
		first := b.popPartition(t, q, "Default", "g", 1)[0]
		require.Equal(t, true, b.ackItems(t, "g", item(first, "retry"))[0]["success"])
		second := b.popPartition(t, q, "Default", "g", 1)[0]
		require.Equal(t, true, b.ackItems(t, "g", item(second, ""))[0]["success"])
		r := b.post(t, "/api/v1/transaction", mustJSON(t, map[string]any{"operations": []any{
			map[string]any{"type": "ack", "consumerGroup": "g", "transactionId": first["transactionId"],
				"partitionId": first["partitionId"], "leaseId": first["leaseId"], "status": "completed"},
			map[string]any{"type": "push", "items": []any{map[string]any{"queue": q + "-out", "payload": 1}}}}}))
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, false, m["success"], "%v", m)
		require.Equal(t, "ack_rejected", m["reason"])
		require.Empty(t, b.popUpTo(t, q+"-out", "Default", "", 10), "the push rolled back with the ack")
	})

	t.Run("OpsPastARetryChangeNothing", func(t *testing.T) {
		t.Parallel()
		const q = "tx1x-past-retry"
		b.pushN(t, q, q, 3)
		msgs := b.popPartition(t, q, "Default", "g", 3)
		// A completed op past a retried message would move the cursor over it, and a
		// dlq op past it would too: both are tolerated and change nothing, and the
		// transaction (its push included) commits.
		m := tx(t, "g", item(msgs[0], "retry"), item(msgs[1], "completed"), item(msgs[2], "dlq"))
		require.Equal(t, true, m["success"], "%v", m)
		for i := range 3 {
			require.Equal(t, true, result(m, i)["success"], "%v", m)
		}
		require.Equal(t, false, result(m, 2)["dlq"], "%v", m)
		msgs = b.popUpTo(t, q, "Default", "g", 10)
		require.Equal(t, []any{q + "-1", q + "-2", q + "-3"}, txIDs(msgs), "nothing skipped, nothing dead-lettered")
		m = tx(t, "g", item(msgs[0], "retry"), item(msgs[2], "dlq"))
		require.Equal(t, true, m["success"], "%v", m)
		msgs = b.popUpTo(t, q, "Default", "g", 10)
		require.Equal(t, []any{q + "-1", q + "-2", q + "-3"}, txIDs(msgs), "a dead letter past the retry skips nothing")

		// A completed op below the retried one moves the cursor: it stops before the nack.
		m = tx(t, "g", item(msgs[1], "retry"), item(msgs[0], "completed"))
		require.Equal(t, true, m["success"], "%v", m)
		require.Equal(t, []any{q + "-2", q + "-3"}, txIDs(b.popUpTo(t, q, "Default", "g", 10)))
	})

	t.Run("APoisonMessageSettledWithTheRestReachesTheDLQ", func(t *testing.T) {
		t.Parallel()
		// A consumer that settles each delivered batch in one transaction, the poison
		// message failed and the others completed: every attempt commits and charges the
		// budget, so the poison message is dead-lettered after retryLimit (3) retries
		// and the others then complete.
		const q = "tx1x-poison"
		b.pushN(t, q, q, 3)
		for attempt := 1; attempt <= 4; attempt++ {
			msgs := b.popUpTo(t, q, "Default", "g", 10)
			require.Equal(t, []any{q + "-1", q + "-2", q + "-3"}, txIDs(msgs), "attempt %d", attempt)
			m := tx(t, "g", item(msgs[0], "failed"), item(msgs[1], "completed"), item(msgs[2], "completed"))
			require.Equal(t, true, m["success"], "attempt %d: %v", attempt, m)
			require.Equal(t, attempt == 4, result(m, 0)["dlq"], "attempt %d: %v", attempt, m)
		}
		require.Empty(t, b.popUpTo(t, q, "Default", "g", 10), "the rest completed after the dead letter")
		r := b.get(t, "/api/v1/dlq?queue="+q+"&consumerGroup=g")
		requireStatus(t, http.StatusOK, r)
		require.EqualValues(t, 1, r.object(t)["total"])
	})

	t.Run("AcksInAnyOrderEndTheLeasedBatch", func(t *testing.T) {
		t.Parallel()
		// The lease goes once the cursor passed the whole batch, as on /ack: acks of
		// the last message alone, or of all three backwards, release it.
		for _, order := range [][]int{{2}, {2, 1, 0}} {
			q := fmt.Sprintf("tx1x-batch-end-%d", len(order))
			b.pushN(t, q, q, 4)
			msgs := b.popPartition(t, q, "Default", "g", 3)
			acks := make([]map[string]any, len(order))
			for i, j := range order {
				acks[i] = item(msgs[j], "completed")
			}
			m := tx(t, "g", acks...)
			require.Equal(t, true, m["success"], "%v", m)
			require.Equal(t, []any{q + "-4"}, txIDs(b.popUpTo(t, q, "Default", "g", 10)), "the lease is released")
		}
	})

	t.Run("BeyondTheLeasedBatchRollsBack", func(t *testing.T) {
		t.Parallel()
		// Under a live lease an ack resolves only within the leased batch, whether the
		// op names the lease or not (1.x SDKs send none): acking q-4 of a batch of two
		// would skip q-3, which no one received.
		for _, withLease := range []bool{false, true} {
			q := fmt.Sprintf("tx1x-beyond-%v", withLease)
			b.pushN(t, q, q, 5)
			msgs := b.popPartition(t, q, "Default", "g", 2)
			op := map[string]any{"type": "ack", "consumerGroup": "g", "partitionId": msgs[0]["partitionId"],
				"transactionId": q + "-4", "status": "completed"}
			if withLease {
				op["leaseId"] = msgs[0]["leaseId"]
			}
			r := b.post(t, "/api/v1/transaction", mustJSON(t, map[string]any{"operations": []any{op}}))
			requireStatus(t, http.StatusOK, r)
			m := r.object(t)
			require.Equal(t, false, m["success"], "%v", m)
			require.Equal(t, "ack_rejected", m["reason"], "%v", m)
			require.Equal(t, "QTXN ack references unknown transactionId; transaction rolled back", m["error"])
			// The batch is intact: its own acks end it and q-3 comes next.
			require.Equal(t, true, tx(t, "g", item(msgs[0], ""), item(msgs[1], ""))["success"])
			require.Equal(t, []any{q + "-3", q + "-4", q + "-5"}, txIDs(b.popUpTo(t, q, "Default", "g", 10)))
		}
	})

	t.Run("ACompletionUnderTheLeaseItsRetryReleased", func(t *testing.T) {
		t.Parallel()
		// An op naming the lease the same transaction's retry released is not a stale
		// lease: past the retried message it changes nothing, and the transaction
		// commits; an unknown lease is still refused.
		const q = "tx1x-lease-after-retry"
		b.pushN(t, q, q, 2)
		msgs := b.popPartition(t, q, "Default", "g", 2)
		op := func(m map[string]any, status, lease string) map[string]any {
			return map[string]any{"type": "ack", "consumerGroup": "g", "transactionId": m["transactionId"],
				"partitionId": m["partitionId"], "leaseId": lease, "status": status}
		}
		lease := msgs[0]["leaseId"].(string)
		r := b.post(t, "/api/v1/transaction", mustJSON(t, map[string]any{"operations": []any{
			op(msgs[0], "retry", lease), op(msgs[1], "completed", "019dc9b7-0000-7000-8000-000000000abc")}}))
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, false, m["success"], "%v", m)
		require.Equal(t, "ack_rejected", m["reason"])
		require.Equal(t, "ACK operation failed: lease released by earlier failure", m["error"])

		r = b.post(t, "/api/v1/transaction", mustJSON(t, map[string]any{"operations": []any{
			op(msgs[0], "retry", lease), op(msgs[1], "completed", lease)}}))
		requireStatus(t, http.StatusOK, r)
		m = r.object(t)
		require.Equal(t, true, m["success"], "%v", m)
		require.Equal(t, []any{q + "-1", q + "-2"}, txIDs(b.popUpTo(t, q, "Default", "g", 10)))
	})

	t.Run("AFullQueueRollsBackWithAReason", func(t *testing.T) {
		t.Parallel()
		// Every rollback carries a reason, which the 1.x SDK copies onto its error.
		const q = "tx1x-full"
		b.configure(t, q, `{"maxSize":1}`)
		b.pushN(t, q, q, 1)
		r := b.post(t, "/api/v1/transaction", mustJSON(t, map[string]any{"operations": []any{
			map[string]any{"type": "push", "items": []any{map[string]any{"queue": q, "payload": 2}}}}}))
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, false, m["success"], "%v", m)
		require.Equal(t, "db_error", m["reason"], "%v", m)
		require.Contains(t, m["error"], "is full", "%v", m)
	})

	t.Run("UnresolvableRollsBack", func(t *testing.T) {
		t.Parallel()
		const q = "tx1x-unresolvable"
		b.pushN(t, q, q, 1)
		msgs := b.popPartition(t, q, "Default", "g", 1)
		ghost := item(msgs[0], "completed")
		ghost["transactionId"] = "never-pushed"
		m := tx(t, "g", item(msgs[0], "completed"), ghost)
		require.Equal(t, false, m["success"])
		require.Equal(t, "ack_rejected", m["reason"])
		require.Equal(t, "QTXN ack references unknown transactionId; transaction rolled back", m["error"])
		// The first ack rolled back with it: q-1 is still pending for g once the lease goes.
		res := b.ackItems(t, "g", item(msgs[0], "retry"))
		require.Equal(t, true, res[0]["success"], "%v", res[0])
		require.Equal(t, []any{q + "-1"}, txIDs(b.popUpTo(t, q, "Default", "g", 10)))
	})
}
