package broker_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// A configure that lowers a hold (windowBuffer, delayedProcessing) frees the
// partitions pops had parked under the old value: the next pop decides again.
func TestLoweringAHoldFreesTheParkedPartitions(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, tc := range []struct {
		key string
		set func(*queue.Options, int)
	}{
		{"windowBuffer", func(o *queue.Options, v int) { o.WindowBuffer = v }},
		{"delayedProcessing", func(o *queue.Options, v int) { o.DelayedProcessing = v }},
	} {
		t.Run(tc.key, func(t *testing.T) {
			q := "hold-" + tc.key
			set := func(v int) {
				_, _, err := tb.b.ConfigureEdit(context.Background(), queue.ConfigureEdit{Name: q,
					ApplyFunc: func(o *queue.Options) { tc.set(o, v) }, Keys: []string{tc.key}})
				require.NoError(t, err)
			}
			set(600)
			tb.push(t, item(q, "", "m", `1`))
			require.Empty(t, tb.pop(t, queue.PopRequest{Queue: q}).Messages, "held for 600 s")
			set(0)
			got := tb.pop(t, queue.PopRequest{Queue: q, AutoAck: true})
			require.Equal(t, []string{"m"}, txids(got.Messages), "the hold is gone with the option")
		})
	}
}

// A failed ack under a retryDelay holds its partition for that delay; a configure that
// changes retryDelay ends the hold, as it ends the other options' holds.
func TestChangingRetryDelayFreesTheHeldPartitions(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	const q = "hold-retryDelay"
	set := func(ms int) {
		_, _, err := tb.b.ConfigureEdit(context.Background(), queue.ConfigureEdit{Name: q,
			ApplyFunc: func(o *queue.Options) { o.RetryDelay = ms }, Keys: []string{"retryDelay"}})
		require.NoError(t, err)
	}
	set(600_000)
	tb.push(t, item(q, "", "m", `1`))
	got := tb.pop(t, queue.PopRequest{Queue: q})
	require.Equal(t, []string{"m"}, txids(got.Messages))
	res := tb.ack(t, "", ackOf(got.Messages[0], got.LeaseID, queue.AckFailed))
	require.True(t, res[0].Success, "%+v", res)
	require.Empty(t, tb.pop(t, queue.PopRequest{Queue: q}).Messages, "held for 600 s")
	set(0)
	got = tb.pop(t, queue.PopRequest{Queue: q, AutoAck: true})
	require.Equal(t, []string{"m"}, txids(got.Messages), "the hold is gone with the option")
}
