package httpapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// The dead-letter flags: deadLetterQueue and dlqAfterMaxRetries default to true; a
// queue whose configure set both false drops a message that exhausts retryLimit (or is
// nacked with dlq) instead of filing it, with the cursor past it and the lease
// released; either flag alone leaves the dead-letter queue on; a queue whose flags
// queen's configure never set (created by a push, adopted from upstream, which stores
// both false) dead-letters and shows both true.
func TestDeadLetterFlags(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)

	flags := func(t *testing.T, q string, dlq, after bool) {
		t.Helper()
		for where, options := range map[string]map[string]any{
			"the queue detail":   b.list(t, "/api/v1/resources/queues/"+q)["options"].(map[string]any),
			"the status options": b.list(t, "/api/v1/status/queues/"+q)["options"].(map[string]any),
		} {
			require.Equal(t, dlq, options["deadLetterQueue"], "%s: deadLetterQueue", where)
			require.Equal(t, after, options["dlqAfterMaxRetries"], "%s: dlqAfterMaxRetries", where)
		}
		config := b.list(t, "/api/v1/status/queues/"+q)["queue"].(map[string]any)["config"].(map[string]any)
		require.Equal(t, dlq, config["deadLetterQueue"], "the status config")
	}
	configure := func(t *testing.T, q, options string) map[string]any {
		t.Helper()
		r := b.post(t, "/api/v1/configure", `{"queue":"`+q+`","options":`+options+`}`)
		requireStatus(t, http.StatusOK, r)
		return r.object(t)["options"].(map[string]any)
	}
	// nack pops the next message of q's Default partition in queue mode, nacks it with
	// status, and returns the ack's item and the message's transaction id.
	nack := func(t *testing.T, q, status string) (map[string]any, string) {
		t.Helper()
		msgs := b.popPartition(t, q, "Default", "", 1)
		require.Len(t, msgs, 1)
		res := b.ackItems(t, "", item(msgs[0], status))
		require.Equal(t, true, res[0]["success"], "%v", res[0])
		return res[0], msgs[0]["transactionId"].(string)
	}
	dead := func(t *testing.T, q string) []any {
		t.Helper()
		var txs []any
		for _, e := range b.dlqEntries(t, q) {
			txs = append(txs, e["transactionId"])
		}
		return txs
	}

	t.Run("DefaultsAreTrue", func(t *testing.T) {
		t.Parallel()
		echo := configure(t, "dlqf-default", `{"retryLimit":1}`)
		require.Equal(t, true, echo["deadLetterQueue"])
		require.Equal(t, true, echo["dlqAfterMaxRetries"])
		flags(t, "dlqf-default", true, true)

		b.pushed(t, "dlqf-auto", "", "dlqf-auto-1", `{}`)
		flags(t, "dlqf-auto", true, true)
		res, tx := nack(t, "dlqf-auto", "dlq")
		require.Equal(t, true, res["dlq"])
		require.Equal(t, []any{tx}, dead(t, "dlqf-auto"))
	})

	t.Run("AQueueQueenNeverConfiguredDeadLetters", func(t *testing.T) {
		t.Parallel()
		for q, record := range map[string]string{
			// As an upstream database holds it (both false), or as queen's configure left
			// it before it recorded the flags.
			"dlqf-adopted": `queen_options - 'dlqOff'`,
			// Both set false by an upstream broker (its configure's defaults) after
			// queen's configure had left the dead-letter queue on.
			"dlqf-upstream-false": `queen_options`,
		} {
			configure(t, q, `{}`)
			_, err := b.db.Exec(t.Context(), `UPDATE queen.queues
				SET dead_letter_queue = false, dlq_after_max_retries = false, queen_options = `+record+`
				WHERE name = $1`, q)
			require.NoError(t, err)
			flags(t, q, true, true)
			b.pushN(t, q, q, 1)
			res, tx := nack(t, q, "dlq")
			require.Equal(t, true, res["dlq"], q)
			require.Equal(t, []any{tx}, dead(t, q))
		}
	})

	t.Run("OneFlagAloneKeepsTheDeadLetterQueue", func(t *testing.T) {
		t.Parallel()
		const q = "dlqf-half"
		echo := configure(t, q, `{"retryLimit":0,"deadLetterQueue":false}`)
		require.Equal(t, false, echo["deadLetterQueue"])
		require.Equal(t, true, echo["dlqAfterMaxRetries"])
		flags(t, q, false, true)
		b.pushN(t, q, q, 1)
		res, tx := nack(t, q, "failed")
		require.Equal(t, true, res["dlq"])
		require.Equal(t, []any{tx}, dead(t, q))
	})

	t.Run("BothFalseDropsThePoison", func(t *testing.T) {
		t.Parallel()
		const q = "dlqf-off"
		echo := configure(t, q, `{"retryLimit":0,"deadLetterQueue":false,"dlqAfterMaxRetries":false}`)
		require.Equal(t, false, echo["deadLetterQueue"])
		require.Equal(t, false, echo["dlqAfterMaxRetries"])
		flags(t, q, false, false)
		b.pushN(t, q, q, 4)

		// retryLimit 0: the first failure exhausts the budget.
		res, tx := nack(t, q, "failed")
		require.Equal(t, q+"-1", tx)
		require.Equal(t, false, res["dlq"])
		require.Equal(t, true, res["leaseReleased"])
		// An explicit dlq is dropped too.
		res, tx = nack(t, q, "dlq")
		require.Equal(t, q+"-2", tx)
		require.Equal(t, false, res["dlq"])
		require.Empty(t, dead(t, q))

		// Through a transaction.
		msgs := b.popPartition(t, q, "Default", "", 1)
		require.Equal(t, q+"-3", msgs[0]["transactionId"])
		r := b.post(t, "/api/v1/transaction", mustJSON(t, map[string]any{"operations": []any{map[string]any{
			"type": "ack", "transactionId": msgs[0]["transactionId"], "partitionId": msgs[0]["partitionId"], "status": "dlq",
		}}}))
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, true, m["success"], "%v", m)
		require.Equal(t, false, m["results"].([]any)[0].(map[string]any)["dlq"])
		require.Empty(t, dead(t, q))

		// Nothing dropped comes back: the cursor is past it and the next message is
		// claimable at once.
		msgs = b.popUpTo(t, q, "Default", "", 10)
		require.Len(t, msgs, 1)
		require.Equal(t, q+"-4", msgs[0]["transactionId"])

		// Naming one flag true again turns the dead-letter queue back on.
		echo = configure(t, q, `{"deadLetterQueue":true}`)
		require.Equal(t, true, echo["deadLetterQueue"])
		require.Equal(t, false, echo["dlqAfterMaxRetries"])
		res = b.ackItems(t, "", item(msgs[0], "dlq"))[0]
		require.Equal(t, true, res["dlq"])
		require.Equal(t, []any{q + "-4"}, dead(t, q))
	})

	t.Run("NotABoolean", func(t *testing.T) {
		t.Parallel()
		requireError(t, b.post(t, "/api/v1/configure", `{"queue":"dlqf-bad","options":{"dlqAfterMaxRetries":"no"}}`),
			http.StatusBadRequest, "invalid_argument", "options.dlqAfterMaxRetries must be a boolean", "options.dlqAfterMaxRetries")
	})
}
