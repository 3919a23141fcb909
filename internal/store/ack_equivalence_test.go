package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// queen.ack_q1 applies the common ack batch set-based and hands every other one to
// queen.ack_items_q1, the item loop; queen.ack_q2 applies the ack of a pop its own
// way, answers it in one row, and hands every other batch to ack_q1. This test drives
// three queues through the same random history (pushes, pops with leases, ack batches
// mixing right, wrong and absent leases, every status, unknown and duplicate messages,
// over-acking), acking them through ack_q2, ack_q1 and ack_items_q1, and requires the
// same answers (ack_q2's single row read as one row per item), the same cursors and
// the same dead letters after every batch.
func TestAckFastPathMatchesTheItemLoop(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, db := openStore(t, 4)

	var h ackHistoryCounts
	for seed := range uint64(60) {
		runAckHistory(t, ctx, st, db, seed, false, &h)
	}
	// The generator must exercise the fast paths, not only the loop.
	require.Greater(t, h.fastShaped, 80, "batches eligible for the fast path")
	require.Greater(t, h.oneRow, 40, "batches ack_q2 answered in one row")
	require.Greater(t, h.refused, 10, "in-order batches of one partition under a wrong lease")
}

// ackHistoryCounts counts, over histories, the ack batches that were all completed
// with their partition's live lease (fast-path shaped), those ack_q2 answered in one
// row, and the acks of one pop under a wrong lease (refused).
type ackHistoryCounts struct{ fastShaped, oneRow, refused int }

// ackTwin is one of the two queues of a history.
type ackTwin struct {
	queue string
	fn    string // ack function
	pids  []string
}

// runAckHistory plays one seeded history and adds its batches to h. With v1x it
// compares queen.ack_q3 with its item loop queen.ack_items_q2 (the 1.x answers, noop
// included) and with Store.MessageAckBatch (the direct ack, else ack_q3) instead of
// ack_q2, ack_q1 and ack_items_q1.
func runAckHistory(t *testing.T, ctx context.Context, st *store.Store, db *pgxpool.Pool, seed uint64, v1x bool,
	h *ackHistoryCounts) {
	rng := rand.New(rand.NewPCG(seed, 7))
	nParts := 1 + rng.IntN(3)
	group := queue.QueueModeGroup
	if rng.IntN(3) == 0 {
		group = "g1"
	}
	twins := []*ackTwin{
		{queue: fmt.Sprintf("fast-%d", seed), fn: "queen.ack_q1"},
		{queue: fmt.Sprintf("slow-%d", seed), fn: "queen.ack_items_q1"},
		{queue: fmt.Sprintf("compact-%d", seed), fn: "queen.ack_q2"},
	}
	noop := "false"
	if v1x {
		twins = []*ackTwin{
			{queue: fmt.Sprintf("fast1x-%d", seed), fn: "queen.ack_q3"},
			{queue: fmt.Sprintf("slow1x-%d", seed), fn: "queen.ack_items_q2"},
			{queue: fmt.Sprintf("direct1x-%d", seed), fn: ackThroughStore},
		}
		noop = "o_noop"
	}
	ids := queue.NewIDGenerator()
	pushed := make([][]string, nParts) // txids per partition, in order
	next := 0
	push := func(p, n int) {
		if n == 0 {
			return
		}
		for _, tw := range twins {
			items := make([]queue.PushItem, n)
			for i := range items {
				items[i] = queue.PushItem{Queue: tw.queue, Partition: fmt.Sprintf("p%d", p),
					TransactionID: fmt.Sprintf("m%d", next+i), MessageID: ids.New(), Payload: benchPayload}
			}
			res, err := st.MessageInsertBatch(ctx, items)
			require.NoError(t, err)
			for len(tw.pids) <= p {
				tw.pids = append(tw.pids, "")
			}
			tw.pids[p] = res[0].PartitionID
		}
		for i := range n {
			pushed[p] = append(pushed[p], fmt.Sprintf("m%d", next+i))
		}
		next += n
	}
	for p := range nParts {
		push(p, 1+rng.IntN(8))
	}
	// Register the group as a wildcard consumer (as its first pop without a partition
	// would), so every cursor write also settles the group's ready rows.
	for _, tw := range twins {
		_, err := db.Exec(ctx, `SELECT queen.queue_consumer_register_q1(q.id, q.name, $2, NULL, NULL, now())
			FROM queen.queues q WHERE q.name = $1`, tw.queue, group)
		require.NoError(t, err)
	}

	for round := range 6 {
		for p := range nParts {
			if rng.IntN(3) == 0 {
				push(p, rng.IntN(6))
			}
		}
		// Pop some partitions under a lease named after the round.
		delivered := make([][]string, nParts)
		leases := make([]string, nParts)
		for p := range nParts {
			if rng.IntN(4) == 0 {
				continue
			}
			leases[p] = fmt.Sprintf("L%d-%d-%d", seed, round, p)
			req := queue.PopRequest{Partition: fmt.Sprintf("p%d", p), ConsumerGroup: group, Batch: 1 + rng.IntN(6), Partitions: 1}
			var got [][]string
			for _, tw := range twins {
				req.Queue = tw.queue
				msgs, err := st.PartitionClaim(ctx, req, leases[p])
				require.NoError(t, err)
				tx := make([]string, len(msgs))
				for i, m := range msgs {
					tx[i] = m.TransactionID
				}
				got = append(got, tx)
			}
			require.Equal(t, got[0], got[1], "seed %d round %d: both queues deliver the same messages", seed, round)
			delivered[p] = got[0]
		}

		// Build one ack batch: either fast-path shaped, or anything.
		type ack struct {
			p                   int
			txid, lease, status string
			err                 string
		}
		var batch []ack
		shape := rng.IntN(10)
		if shape == 0 {
			// The ack of one pop, in order, under a lease that is not the partition's:
			// shaped for ack_q2's own path, refused by its lease check.
			for p := range nParts {
				if len(delivered[p]) > 0 {
					for _, tx := range delivered[p] {
						batch = append(batch, ack{p: p, txid: tx, lease: "stale", status: queue.AckCompleted})
					}
					h.refused++
					break
				}
			}
		} else if shape <= 6 {
			for p := range nParts {
				if len(delivered[p]) == 0 {
					continue
				}
				n := 1 + rng.IntN(len(delivered[p]))
				for _, tx := range delivered[p][:n] {
					batch = append(batch, ack{p: p, txid: tx, lease: leases[p], status: queue.AckCompleted})
				}
			}
			if rng.IntN(2) == 0 { // else in delivery order, as a consumer acks one pop
				rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
			}
			if len(batch) > 0 {
				h.fastShaped++
			}
		} else {
			for range rng.IntN(12) {
				p := rng.IntN(nParts)
				a := ack{p: p, status: queue.AckCompleted}
				switch r := rng.IntN(20); {
				case r < 13 && len(delivered[p]) > 0:
					a.txid = delivered[p][rng.IntN(len(delivered[p]))]
				case r < 17:
					a.txid = pushed[p][rng.IntN(len(pushed[p]))]
				case r < 19:
					a.txid = fmt.Sprintf("unknown-%d", rng.IntN(5))
				default:
					other := rng.IntN(nParts)
					a.txid = pushed[other][rng.IntN(len(pushed[other]))] // maybe from another partition
				}
				switch r := rng.IntN(20); {
				case r < 14:
					a.lease = leases[p]
				case r < 17:
					a.lease = ""
				default:
					a.lease = "wrong"
				}
				switch r := rng.IntN(20); {
				case r < 13:
				case r < 15:
					a.status = "success"
				case r < 17:
					a.status, a.err = queue.AckFailed, "boom"
				case r < 19:
					a.status = "retry"
				default:
					a.status = "dlq"
				}
				batch = append(batch, a)
			}
		}

		var answers []string
		for _, tw := range twins {
			if tw.fn == ackThroughStore {
				acks := make([]queue.Ack, len(batch))
				for i, a := range batch {
					acks[i] = queue.Ack{TransactionID: a.txid, PartitionID: tw.pids[a.p], LeaseID: a.lease, Status: a.status, Error: a.err}
				}
				res, err := st.MessageAckBatch(ctx, group, acks)
				require.NoError(t, err)
				out := make([]string, len(res))
				for i, r := range res {
					// The store answers an absent lease_released as false, as clients see it;
					// the functions' answers are compared the same way.
					rel := r.LeaseReleased != nil && *r.LeaseReleased
					q := orDash(r.QueueName)
					q = q[strings.IndexByte(q, '-')+1:]
					out[i] = fmt.Sprintf("%d ok=%v err=%s q=%s p=%s rel=%v dlq=%v noop=%v", r.Index, r.Success,
						orDash(r.Error), q, orDash(r.PartitionName), rel, r.DLQ, r.Noop)
				}
				answers = append(answers, strings.Join(out, "\n"))
				continue
			}
			txids, pids, leaseIDs, statuses, errs := []string{}, []string{}, []string{}, []string{}, []string{}
			for _, a := range batch {
				txids, pids = append(txids, a.txid), append(pids, tw.pids[a.p])
				leaseIDs, statuses, errs = append(leaseIDs, a.lease), append(statuses, a.status), append(errs, a.err)
			}
			if tw.fn == "queen.ack_q2" || tw.fn == "queen.ack_q3" { // a field with one value for all items is sent once, as the store does
				pids, leaseIDs, statuses, errs = sentOnce(pids), sentOnce(leaseIDs), sentOnce(statuses), sentOnce(errs)
			}
			rows, err := db.Query(ctx, `SELECT o_idx, o_success, coalesce(nullif(o_error, ''), '-'), coalesce(nullif(o_queue, ''), '-'),
				coalesce(nullif(o_partition, ''), '-'), coalesce(o_lease_released, false)::text, o_dlq, `+noop+`
				FROM `+tw.fn+`($1, $2, $3, $4, $5, $6) ORDER BY o_idx`, txids, pids, leaseIDs, statuses, errs, group)
			require.NoError(t, err)
			var out []string
			for rows.Next() {
				var idx int
				var ok, dlq, isNoop bool
				var e, q, part, released string
				require.NoError(t, rows.Scan(&idx, &ok, &e, &q, &part, &released, &dlq, &isNoop))
				q = q[strings.IndexByte(q, '-')+1:]
				if idx == -1 { // ack_q2: every item succeeded; the last released the lease
					h.oneRow++
					for i := range batch {
						rel := released == "true" && i == len(batch)-1
						out = append(out, fmt.Sprintf("%d ok=true err=- q=%s p=%s rel=%v dlq=false noop=false", i, q, part, rel))
					}
					continue
				}
				out = append(out, fmt.Sprintf("%d ok=%v err=%s q=%s p=%s rel=%s dlq=%v noop=%v", idx, ok, e, q, part, released, dlq, isNoop))
			}
			require.NoError(t, rows.Err())
			answers = append(answers, strings.Join(out, "\n"))
		}
		slow := ackState(t, ctx, db, twins[1].queue)
		for i, tw := range twins {
			require.Equal(t, answers[1], answers[i], "seed %d round %d: %s's answers to %+v", seed, round, tw.fn, batch)
			require.Equal(t, slow, ackState(t, ctx, db, tw.queue),
				"seed %d round %d: cursors and dead letters after %s of %+v", seed, round, tw.fn, batch)
		}
	}
}

// TestAck1xFastPathMatchesTheItemLoop is TestAckFastPathMatchesTheItemLoop for the
// acknowledgement with the Queen 1.x answers: queen.ack_q3 answers the ack of a pop in
// one row and hands every other batch to queen.ack_items_q2; both must agree.
func TestAck1xFastPathMatchesTheItemLoop(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, db := openStore(t, 4)

	var h ackHistoryCounts
	for seed := range uint64(60) {
		runAckHistory(t, ctx, st, db, seed, true, &h)
	}
	require.Greater(t, h.fastShaped, 80, "batches eligible for the fast path")
	require.Greater(t, h.oneRow, 40, "batches ack_q3 answered in one row")
	direct, general := st.AckPaths()
	require.Greater(t, direct, uint64(40), "batches the store's direct ack applied")
	require.Greater(t, general, uint64(40), "batches the store handed to ack_q3")
}

// ackThroughStore names the twin acked through Store.MessageAckBatch: the direct ack
// for the ack of a pop, queen.ack_q3 for the rest.
const ackThroughStore = "store"

// orDash is s, or "-" for "" (as the functions' NULL is rendered).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// sentOnce returns values, or its single value when all are the same.
func sentOnce(values []string) []string {
	for _, v := range values {
		if v != values[0] {
			return values
		}
	}
	return values[:min(len(values), 1)]
}

// ackState renders every cursor row, ready row and dead letter of queue, with
// messages named by transaction id, so two queues with the same history compare equal.
func ackState(t *testing.T, ctx context.Context, db *pgxpool.Pool, queueName string) []string {
	t.Helper()
	rows, err := db.Query(ctx, `
SELECT format('cursor %s/%s at=%s acked=%s size=%s retries=%s total=%s batches=%s worker=%s leased=%s',
              p.name, pc.consumer_group, coalesce(m.transaction_id, '-'), pc.acked_count, pc.batch_size,
              pc.batch_retry_count, pc.total_messages_consumed, pc.total_batches_consumed,
              coalesce(pc.worker_id, '-'), pc.lease_expires_at IS NOT NULL)
FROM queen.partition_consumers pc
JOIN queen.partitions p ON p.id = pc.partition_id
JOIN queen.queues q ON q.id = p.queue_id
LEFT JOIN queen.messages m ON m.id = pc.last_consumed_id
WHERE q.name = $1
UNION ALL
SELECT format('ready %s/%s parked=%s', p.name, r.consumer_group, r.ready_at > now())
FROM queen.partition_ready r
JOIN queen.partitions p ON p.id = r.partition_id
JOIN queen.queues q ON q.id = p.queue_id
WHERE q.name = $1
UNION ALL
SELECT format('dlq %s/%s %s err=%s retries=%s', p.name, d.consumer_group, m.transaction_id, d.error_message, d.retry_count)
FROM queen.dead_letter_queue d
JOIN queen.messages m ON m.id = d.message_id
JOIN queen.partitions p ON p.id = d.partition_id
JOIN queen.queues q ON q.id = p.queue_id
WHERE q.name = $1`, queueName)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	slices.Sort(out)
	return out
}

// queen.ack_q2 takes each field once per item or once for all; any other length is a
// caller's mistake, refused before anything is acked.
func TestAckQ2RefusesMisalignedArrays(t *testing.T) {
	t.Parallel()
	_, db := openStore(t, 1)
	_, err := db.Exec(t.Context(), `SELECT * FROM queen.ack_q2($1, $2, $3, $4, $5, '__QUEUE_MODE__')`,
		[]string{"a", "b", "c"}, []string{"00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002"},
		[]string{""}, []string{"completed"}, []string{""})
	require.ErrorContains(t, err, "3 items, and 2 partition ids")
}
