package store_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// The store benchmarks time the two hot SQL paths without HTTP: a push through
// MessageInsertBatch (the direct push), and one pop_q4 claim plus one ack_q4 batch. queen-bench
// (docs/benchmarks.md) measures the same paths end to end against raw ceilings.

var benchPayload = json.RawMessage(`{"kind":"bench","seq":12345,"body":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`)

func openBenchStore(b *testing.B) *store.Store {
	st, _ := openStore(b, 4)
	return st
}

func benchItems(ids *queue.IDGenerator, n int, partition string) []queue.PushItem {
	items := make([]queue.PushItem, n)
	for i := range items {
		items[i] = queue.PushItem{Queue: "bench", Partition: partition, Payload: benchPayload,
			TransactionID: ids.New(), MessageID: ids.New()}
	}
	return items
}

func BenchmarkMessageInsertBatch(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run("batch="+strconv.Itoa(n), func(b *testing.B) {
			st := openBenchStore(b)
			ids := queue.NewIDGenerator()
			items := benchItems(ids, n, "p0")
			b.ReportAllocs()
			for b.Loop() {
				for i := range items {
					items[i].TransactionID, items[i].MessageID = ids.New(), ids.New()
				}
				res, err := st.MessageInsertBatch(b.Context(), items)
				if err != nil {
					b.Fatal(err)
				}
				if res[n-1].Status != queue.StatusQueued {
					b.Fatalf("item %d: %+v", n-1, res[n-1])
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msg/s")
		})
	}
}

// BenchmarkCombinedPush times the statement the broker's push combining sends for
// four producers pushing flat out: four pushes of one or ten messages, each to its own
// partition of 100 (round robin), in one direct push, statement after statement on one
// connection. Its msg/s, beside queen-bench's raw insert ceiling on the same cluster,
// is what combining gives PostgreSQL with no HTTP in the cycle (docs/benchmarks.md).
func BenchmarkCombinedPush(b *testing.B) {
	const partitions, pushes = 100, 4
	for _, per := range []int{1, 10} {
		b.Run("per="+strconv.Itoa(per), func(b *testing.B) {
			st := openBenchStore(b)
			ids := queue.NewIDGenerator()
			names := make([]string, partitions)
			var fill []queue.PushItem
			for p := range names {
				names[p] = "p" + strconv.Itoa(p)
				fill = append(fill, benchItems(ids, 1, names[p])...)
			}
			if _, err := st.MessageInsertBatch(b.Context(), fill); err != nil { // creates the partitions
				b.Fatal(err)
			}
			items := make([]queue.PushItem, 0, pushes*per)
			next := 0
			b.ReportAllocs()
			for b.Loop() {
				items = items[:0]
				for range pushes {
					items = append(items, benchItems(ids, per, names[next%partitions])...)
					next++
				}
				res, err := st.MessageInsertBatch(b.Context(), items)
				if err != nil {
					b.Fatal(err)
				}
				if res[len(res)-1].Status != queue.StatusQueued {
					b.Fatalf("item %d: %+v", len(res)-1, res[len(res)-1])
				}
			}
			b.ReportMetric(float64(pushes*per)*float64(b.N)/b.Elapsed().Seconds(), "msg/s")
		})
	}
}

func BenchmarkPartitionClaimAck(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run("batch="+strconv.Itoa(n), func(b *testing.B) {
			st := openBenchStore(b)
			ids := queue.NewIDGenerator()
			fill := func() {
				if _, err := st.MessageInsertBatch(b.Context(), benchItems(ids, 100*n, "p0")); err != nil {
					b.Fatal(err)
				}
			}
			req := queue.PopRequest{Queue: "bench", ConsumerGroup: queue.QueueModeGroup, Batch: n, Partitions: 1}
			acks := make([]queue.Ack, 0, n)
			b.ReportAllocs()
			for b.Loop() {
				lease := ids.New()
				msgs, err := st.PartitionClaim(b.Context(), req, lease)
				if err != nil {
					b.Fatal(err)
				}
				if len(msgs) == 0 {
					b.StopTimer()
					fill()
					b.StartTimer()
					if msgs, err = st.PartitionClaim(b.Context(), req, lease); err != nil || len(msgs) == 0 {
						b.Fatalf("claim after fill: %d messages, %v", len(msgs), err)
					}
				}
				acks = acks[:0]
				for _, m := range msgs {
					acks = append(acks, queue.Ack{TransactionID: m.TransactionID, PartitionID: m.PartitionID,
						LeaseID: lease, Status: queue.AckCompleted})
				}
				res, err := st.MessageAckBatch(b.Context(), queue.QueueModeGroup, acks)
				if err != nil {
					b.Fatal(err)
				}
				if !res[len(res)-1].Success {
					b.Fatalf("ack: %+v", res[len(res)-1])
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msg/s")
		})
	}
}
