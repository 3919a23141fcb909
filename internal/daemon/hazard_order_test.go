package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// TestHazardCommitOrderLoss: upstream stamps created_at with the
// transaction start, so two concurrent pushes to one partition can commit in the
// opposite order of their timestamps; a consumer that acks the later one first puts
// the earlier one behind its cursor, and it is never delivered. Here several
// producers push to one partition through two brokers while a consumer pops and
// acks as it goes; every round, every message must be delivered, in an order that
// keeps each producer's push order.
func TestHazardCommitOrderLoss(t *testing.T) {
	t.Parallel()

	pair := startPair(t)
	const (
		q         = "commit-order"
		rounds    = 8
		producers = 8
		perProd   = 12
	)
	configure(t, pair[0], q, api.QueueOptions{})
	for r := range rounds {
		partition := fmt.Sprintf("hot-%d", r)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)

		var wg sync.WaitGroup
		pushErr := make(chan error, producers)
		for p := range producers {
			wg.Go(func() {
				for s := range perProd {
					_, err := pair[(p+s)%2].client.Push(ctx, api.PushItem{Queue: q, Partition: partition,
						TransactionID: fmt.Sprintf("p%d-s%d", p, s), Payload: json.RawMessage(fmt.Sprintf(`{"p":%d,"s":%d}`, p, s))})
					if err != nil {
						pushErr <- err
						return
					}
				}
			})
		}
		pushed := make(chan struct{})
		go func() { wg.Wait(); close(pushed) }()

		// The consumer: pop whatever is there and ack it at once, while pushes go on,
		// until every message has come or nothing came for a while after the pushes.
		var got []api.Message
		quietSince := time.Time{}
		for len(got) < producers*perProd {
			resp, err := pair[len(got)%2].client.Pop(ctx, client.PopOptions{Queue: q, Partition: partition,
				Batch: 5, Wait: true, Timeout: 200 * time.Millisecond})
			require.NoError(t, err)
			if len(resp.Messages) == 0 {
				select {
				case <-pushed:
					if quietSince.IsZero() {
						quietSince = time.Now()
					}
				default:
				}
				if !quietSince.IsZero() && time.Since(quietSince) > 3*time.Second {
					break
				}
				continue
			}
			quietSince = time.Time{}
			got = append(got, resp.Messages...)
			acks := make([]api.AckItem, len(resp.Messages))
			for i, m := range resp.Messages {
				acks[i] = api.AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: resp.LeaseID}
			}
			res, err := pair[0].client.AckBatch(ctx, api.AckBatchRequest{Acknowledgments: acks})
			require.NoError(t, err)
			for i, a := range res {
				require.True(t, a.Success, "ack %d: %+v", i, a)
			}
		}
		<-pushed
		cancel()
		select {
		case err := <-pushErr:
			require.NoError(t, err, "round %d: push", r)
		default:
		}

		seen := map[string]bool{}
		last := map[int]int{}
		for _, m := range got {
			require.False(t, seen[m.TransactionID], "round %d: %s delivered twice (every ack succeeded)", r, m.TransactionID)
			seen[m.TransactionID] = true
			var body struct{ P, S int }
			require.NoError(t, json.Unmarshal(m.Data, &body))
			if prev, ok := last[body.P]; ok {
				require.Greater(t, body.S, prev, "round %d: producer %d's messages out of push order", r, body.P)
			}
			last[body.P] = body.S
		}
		var missing []string
		for p := range producers {
			for s := range perProd {
				if id := fmt.Sprintf("p%d-s%d", p, s); !seen[id] {
					missing = append(missing, id)
				}
			}
		}
		sort.Strings(missing)
		require.Empty(t, missing, "round %d: messages that ended up behind the cursor and were never delivered", r)
	}
}

// TestHazardPopAfterPushVisibility: upstream refreshes the
// partition lookup after answering the push, so a wildcard pop sent right after a
// push has returned can miss the message. Here each round pushes to a brand-new
// partition through one broker and pops at once, without waiting, through the other.
func TestHazardPopAfterPushVisibility(t *testing.T) {
	t.Parallel()

	pair := startPair(t)
	const q = "visibility"
	for r := range 40 {
		pushed := push(t, pair[r%2], q, fmt.Sprintf("v%d", r), fmt.Sprintf(`{"round":%d}`, r))
		got, err := pair[(r+1)%2].client.Pop(ctxT(t), client.PopOptions{Queue: q, AutoAck: true, Batch: 10})
		require.NoError(t, err)
		require.Len(t, got.Messages, 1, "round %d: the pushed message is visible to a pop sent after the push answered", r)
		require.Equal(t, pushed[0].MessageID, got.Messages[0].ID, "round %d", r)
	}
}
