package store_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/queenmq/queen/internal/queue"
)

// TestConflationUnderConcurrentPushes races a producer pushing increasing values to
// four partitions with three consumers of one conflating group claiming and acking.
// Every message is accounted for exactly once, delivered or skipped (the deliveries
// of a partition plus the skips its acks report add up to what was pushed there), no
// value is delivered twice, and a partition's last value is always delivered once the
// producer stops.
func TestConflationUnderConcurrentPushes(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t, 8)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const partitions, each = 4, 150
	ids := queue.NewIDGenerator()
	on := true

	var mu sync.Mutex
	delivered := map[string][]int{} // by partition
	accounted := map[string]int{}   // delivered + skipped, by partition
	produced := make(chan struct{})

	var g errgroup.Group
	g.Go(func() error {
		defer close(produced)
		for v := 1; v <= each; v++ {
			for p := range partitions {
				_, err := st.MessageInsertBatch(ctx, []queue.PushItem{{Queue: "cf-race",
					Partition: "p" + strconv.Itoa(p), TransactionID: ids.New(), MessageID: ids.New(),
					Payload: []byte(strconv.Itoa(v))}})
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
	for c := range 3 {
		g.Go(func() error {
			idle := 0
			for {
				lease := ids.New()
				claim, err := st.Claim(ctx, queue.PopRequest{Queue: "cf-race", ConsumerGroup: "last", Batch: 2,
					Partitions: 2, PartitionsSet: true, SubscriptionMode: "all", Conflation: &on}, lease)
				if err != nil {
					return fmt.Errorf("consumer %d: %w", c, err)
				}
				if len(claim.Messages) == 0 {
					select {
					case <-produced:
						if idle++; idle > 20 { // the producer is done and nothing came several times
							return nil
						}
					default:
					}
					continue
				}
				idle = 0
				if !claim.Conflation {
					return fmt.Errorf("consumer %d: a claim of the conflating group without conflation", c)
				}
				acks := make([]queue.Ack, len(claim.Messages))
				for i, m := range claim.Messages {
					acks[i] = queue.Ack{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: lease,
						Status: queue.AckCompleted}
				}
				res, err := st.MessageAckBatch(ctx, "last", acks)
				if err != nil {
					return fmt.Errorf("consumer %d: %w", c, err)
				}
				mu.Lock()
				for i, r := range res {
					if !r.Success || r.Conflated == nil {
						mu.Unlock()
						return fmt.Errorf("consumer %d: ack %+v", c, r)
					}
					m := claim.Messages[i]
					v, _ := strconv.Atoi(string(m.Payload))
					delivered[m.Partition] = append(delivered[m.Partition], v)
					accounted[m.Partition] += 1 + *r.Conflated
				}
				mu.Unlock()
			}
		})
	}
	require.NoError(t, g.Wait())

	for p := range partitions {
		name := "p" + strconv.Itoa(p)
		got := delivered[name]
		require.NotEmpty(t, got, name)
		slices.Sort(got)
		for i := 1; i < len(got); i++ {
			require.Greater(t, got[i], got[i-1], "%s: no value delivered twice: %v", name, got)
		}
		require.Equal(t, each, got[len(got)-1], "%s: the last value is delivered", name)
		require.Equal(t, each, accounted[name], "%s: every message delivered or skipped once (%d delivered)", name, len(got))
	}
}
