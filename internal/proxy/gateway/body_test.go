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
