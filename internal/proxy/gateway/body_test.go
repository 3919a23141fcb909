package gateway

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTransactionBodyNamesTheTimerRidersQueues: the queues of a transaction's timers
// rider are checked against a key's queue list like its pushes, and each schedule
// counts as a message to come (a cancel does not), so a key limited to some queues
// cannot schedule into others through a transaction.
func TestTransactionBodyNamesTheTimerRidersQueues(t *testing.T) {
	t.Parallel()
	p, err := parse(bodyTransaction, []byte(`{"operations":[{"type":"push","items":[{"queue":"orders","payload":{}}]}],
		"timers":[{"op":"schedule","queue":"reminders","timerKey":"k","delayMs":1,"txn":"t","payload":"e30="},
		          {"op":"cancel","queue":"audit","timerKey":"k"}]}`))
	require.NoError(t, err)
	require.Equal(t, []string{"reminders", "audit", "orders"}, p.queues)
	require.Equal(t, 2, p.messages, "the push and the schedule")

	p, err = parse(bodyTransaction, []byte(`{"timers":[{"op":"reschedule","queue":"reminders"}]}`))
	require.NoError(t, err, "a riders-only transaction")
	require.Equal(t, []string{"reminders"}, p.queues)
	require.Equal(t, 1, p.messages)
}

// TestTransactionAndConfigureKeysMatchExactly: the proxy reads the keys the broker
// reads, exactly, so a look-alike key ("Queue") names no queue; the flat push form
// names its own.
func TestTransactionAndConfigureKeysMatchExactly(t *testing.T) {
	t.Parallel()
	p, err := parse(bodyTransaction, []byte(`{"operations":[
		{"type":"push","items":[{"queue":"billing","Queue":"orders","payload":{}}]},
		{"type":"push","queue":"audit","data":"abc"},
		{"type":"ack","queue":"ignored","transactionId":"t","partitionId":"p"}]}`))
	require.NoError(t, err)
	require.Equal(t, []string{"billing", "audit"}, p.queues)
	require.Equal(t, 2, p.messages)
	require.EqualValues(t, len(`{}`)+len(`"abc"`), p.payloadBytes)

	// A null payload is absent to the broker, which then stores the item's data: the
	// bytes counted against quotas are those.
	p, err = parse(bodyTransaction, []byte(`{"operations":[{"type":"push","items":[
		{"queue":"q","payload":null,"data":"0123456789"},{"queue":"q"}]}]}`))
	require.NoError(t, err)
	require.EqualValues(t, len(`"0123456789"`)+len(`{}`), p.payloadBytes)

	p, err = parse(bodyConfigure, []byte(`{"QUEUE":"orders","queue":"billing"}`))
	require.NoError(t, err)
	require.Equal(t, []string{"billing"}, p.queues)

	_, err = parse(bodyConfigure, []byte(`{"queue":7}`))
	require.Error(t, err, "a queue that is not a string")
}
