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

// TestAGroupsRacingFirstPopsFollowOnePolicy runs the first pops of a group on a queue
// at once, half of them asking for conflation: whichever stores the group's policy,
// every one of them is served by it and told so (conflation when it is on, a conflict
// when it asked for it and it is off), and their acks report skips exactly when it is
// on.
func TestAGroupsRacingFirstPopsFollowOnePolicy(t *testing.T) {
	t.Parallel()
	st, db := openStore(t, 8)
	ctx := t.Context()
	ids := queue.NewIDGenerator()
	on := true
	for q := range 20 {
		name := fmt.Sprintf("cf-first-%d", q)
		var items []queue.PushItem
		for p := range 4 {
			for range 3 {
				items = append(items, queue.PushItem{Queue: name, Partition: "p" + strconv.Itoa(p),
					TransactionID: ids.New(), MessageID: ids.New(), Payload: []byte(`1`)})
			}
		}
		_, err := st.MessageInsertBatch(ctx, items)
		require.NoError(t, err)

		type answer struct {
			asked bool
			claim queue.Claim
			acks  []queue.AckResult
		}
		answers := make([]answer, 4)
		var g errgroup.Group
		for i := range answers {
			g.Go(func() error {
				req := queue.PopRequest{Queue: name, ConsumerGroup: "g", Batch: 3, Partitions: 1, PartitionsSet: true,
					SubscriptionMode: "all"}
				if i%2 == 0 {
					req.Conflation = &on
				}
				lease := ids.New()
				c, err := st.Claim(ctx, req, lease)
				if err != nil {
					return err
				}
				acks := make([]queue.Ack, len(c.Messages))
				for j, m := range c.Messages {
					acks[j] = queue.Ack{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: lease,
						Status: queue.AckCompleted}
				}
				res, err := st.MessageAckBatch(ctx, "g", acks)
				answers[i] = answer{asked: req.Conflation != nil, claim: c, acks: res}
				return err
			})
		}
		require.NoError(t, g.Wait())
		stored := policies(t, ctx, db, name)["g"]
		for _, a := range answers {
			require.Equal(t, stored, a.claim.Conflation, "%s: the stored policy serves every first pop", name)
			// A pop that did not ask is never told of a conflict.
			require.Equal(t, a.asked && !stored, a.claim.ConflationConflict, "%s: asked %v, stored %v", name, a.asked, stored)
			if stored {
				require.LessOrEqual(t, len(a.claim.Messages), 1, "%s: one message per partition", name)
			}
			for _, r := range a.acks {
				require.True(t, r.Success, r.Error)
				require.Equal(t, stored, r.Conflated != nil, "%s: conflated on the acks of a conflating group", name)
			}
		}
	}
}
