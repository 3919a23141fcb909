package daemon_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// configure creates queue q with opts and requires success.
func configure(t *testing.T, tb *testBundle, q string, opts api.QueueOptions) {
	t.Helper()
	res, err := tb.client.Configure(ctxT(t), api.ConfigureRequest{Queue: q, Options: &opts})
	require.NoError(t, err)
	require.True(t, res.Configured)
}

func TestDaemonLeaseExpiryRedelivers(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)
	const q = "lease"
	configure(t, tb, q, api.QueueOptions{LeaseTime: api.Int(1)})
	push(t, tb, q, "", `"job"`)

	start := time.Now() // before the lease is taken, so expiry comes at least 1 s later
	first, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q})
	require.NoError(t, err)
	require.Len(t, first.Messages, 1)
	require.NotEmpty(t, first.LeaseID)

	// Nobody acks: once the 1 s lease has expired a pop gets the message again, and not
	// before (TestDaemonPartitionsIndependent checks a live lease blocks its partition).
	again := popEventually(t, tb, client.PopOptions{Queue: q}, 15*time.Second, "redelivery after lease expiry")
	require.GreaterOrEqual(t, time.Since(start), time.Second, "redelivered before the lease expired")
	require.Len(t, again.Messages, 1)
	require.Equal(t, first.Messages[0].ID, again.Messages[0].ID)
	require.Equal(t, first.Messages[0].TransactionID, again.Messages[0].TransactionID)
	require.NotEqual(t, first.LeaseID, again.LeaseID, "the redelivery is under a new lease")

	stale, err := tb.client.Ack(ctxT(t), api.AckRequest{
		TransactionID: first.Messages[0].TransactionID, PartitionID: first.Messages[0].PartitionID,
		LeaseID: first.LeaseID,
	})
	require.NoError(t, err)
	require.False(t, stale.Success, "an ack under the expired lease is refused")
	require.NotNil(t, stale.Error)
	require.Contains(t, *stale.Error, "lease")

	ok, err := tb.client.Ack(ctxT(t), api.AckRequest{
		TransactionID: again.Messages[0].TransactionID, PartitionID: again.Messages[0].PartitionID,
		LeaseID: again.LeaseID,
	})
	require.NoError(t, err)
	require.True(t, ok.Success, "%+v", ok)
	require.Equal(t, 1, queueTotals(t, tb, q).Completed)
}

// TestDaemonFailedAckRetriesThenDeadLetters: with retryLimit=1 a message failed twice
// is delivered twice, dead-lettered on the second failure, and the next one follows.
func TestDaemonFailedAckRetriesThenDeadLetters(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)
	const q = "retries"
	configure(t, tb, q, api.QueueOptions{RetryLimit: api.Int(1)})
	push(t, tb, q, "", `"poison"`, `"next"`)

	fail := func(resp *api.PopResponse) api.AckResult {
		t.Helper()
		m := resp.Messages[0]
		res, err := tb.client.Ack(ctxT(t), api.AckRequest{
			TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: resp.LeaseID,
			Status: api.AckStatusFailed, Error: "cannot process",
		})
		require.NoError(t, err)
		require.True(t, res.Success, "%+v", res)
		return res
	}

	var poisonID string
	for delivery := 1; delivery <= 2; delivery++ {
		resp, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q})
		require.NoError(t, err)
		require.Equal(t, []string{`"poison"`}, payloads(t, resp.Messages), "delivery %d", delivery)
		if poisonID == "" {
			poisonID = resp.Messages[0].ID
		}
		require.Equal(t, poisonID, resp.Messages[0].ID)

		res := fail(resp)
		if delivery == 1 {
			require.False(t, res.DLQ, "the first failure is retried")
			require.NotNil(t, res.LeaseReleased)
			require.True(t, *res.LeaseReleased, "a retry releases the lease for redelivery")
		} else {
			require.True(t, res.DLQ, "the failure after retryLimit retries dead-letters")
		}
	}

	next, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q})
	require.NoError(t, err)
	require.Equal(t, []string{`"next"`}, payloads(t, next.Messages), "the cursor moved past the dead letter")

	totals := queueTotals(t, tb, q)
	require.Equal(t, 1, totals.DeadLetter)
}

// txResponse posts a transaction with net/http and requires HTTP 200 and a JSON body.
func txResponse(t *testing.T, tb *testBundle, req api.TransactionRequest) api.TransactionResponse {
	t.Helper()
	body, err := json.Marshal(req)
	require.NoError(t, err)
	status, data := tb.raw(t, http.MethodPost, "/api/v1/transaction", string(body))
	require.Equal(t, http.StatusOK, status, "a transaction answers 200 even when it rolls back: %s", data)
	var resp api.TransactionResponse
	require.NoError(t, json.Unmarshal(data, &resp), "%s", data)
	return resp
}

// TestDaemonTransactionIsAtomic checks both directions of atomicity: a failing push
// undoes the ack before it, a failing ack undoes the push before it, and the same
// operations succeed together when nothing fails.
func TestDaemonTransactionIsAtomic(t *testing.T) {
	t.Parallel()

	const in, out, dupQ = "tx-in", "tx-out", "tx-dup"
	type txBundle struct {
		*testBundle
		msg   api.Message     // popped from in, leased for 1 s, not acked
		ackOp api.TxOperation // completes msg, without a leaseId (as clients send it)
	}
	setup := func(t *testing.T) *txBundle {
		t.Helper()
		tb := startBroker(t)
		_, err := tb.client.Push(ctxT(t), api.PushItem{Queue: dupQ, TransactionID: "dup-1", Payload: json.RawMessage(`1`)})
		require.NoError(t, err)

		configure(t, tb, in, api.QueueOptions{LeaseTime: api.Int(1)})
		push(t, tb, in, "", `"input"`)
		popped, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: in})
		require.NoError(t, err)
		require.Len(t, popped.Messages, 1)
		m := popped.Messages[0]
		return &txBundle{testBundle: tb, msg: m, ackOp: api.TxOperation{
			Type: api.TxOpAck, TransactionID: m.TransactionID, PartitionID: m.PartitionID, Status: api.AckStatusCompleted,
		}}
	}

	t.Run("FailingPushUndoesAck", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)

		resp := txResponse(t, tb.testBundle, api.TransactionRequest{Operations: []api.TxOperation{
			tb.ackOp,
			{Type: api.TxOpPush, Items: []api.PushItem{{Queue: dupQ, TransactionID: "dup-1", Payload: json.RawMessage(`2`)}}},
		}})
		require.False(t, resp.Success, "a duplicate transactionId fails a transactional push: %+v", resp)
		require.NotEmpty(t, resp.Error)

		require.Zero(t, queueTotals(t, tb.testBundle, in).Completed, "the ack was rolled back")
		require.Equal(t, 1, queueTotals(t, tb.testBundle, dupQ).Total, "nothing was pushed")
		// Still unconsumed: it comes back once its lease has expired.
		again := popEventually(t, tb.testBundle, client.PopOptions{Queue: in}, 15*time.Second, "the un-acked message is redelivered")
		require.Equal(t, tb.msg.ID, again.Messages[0].ID)
	})

	t.Run("FailingAckUndoesPush", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)

		resp := txResponse(t, tb.testBundle, api.TransactionRequest{Operations: []api.TxOperation{
			{Type: api.TxOpPush, Items: []api.PushItem{{Queue: out, Payload: json.RawMessage(`"result"`)}}},
			{Type: api.TxOpAck, TransactionID: "no-such-message", PartitionID: tb.msg.PartitionID, Status: api.AckStatusCompleted},
		}})
		require.False(t, resp.Success, "%+v", resp)
		require.Equal(t, "QTXN ack references unknown transactionId; transaction rolled back", resp.Error)

		require.Zero(t, queueTotals(t, tb.testBundle, out).Total, "the push was rolled back")
		none, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: out})
		require.NoError(t, err)
		require.Empty(t, none.Messages)
	})

	t.Run("SucceedsTogether", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)

		resp := txResponse(t, tb.testBundle, api.TransactionRequest{Operations: []api.TxOperation{
			tb.ackOp,
			{Type: api.TxOpPush, Items: []api.PushItem{{Queue: out, Payload: json.RawMessage(`"result"`)}}},
		}})
		require.True(t, resp.Success, "%+v", resp)
		require.Len(t, resp.Results, 2)

		require.Equal(t, 1, queueTotals(t, tb.testBundle, in).Completed)
		got, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: out, AutoAck: true})
		require.NoError(t, err)
		require.Equal(t, []string{`"result"`}, payloads(t, got.Messages))
	})
}
