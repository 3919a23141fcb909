package store_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// pathCounts is the growth of the store's push paths since before.
func pathCounts(st *store.Store, before [2]uint64) (direct, general uint64) {
	d, g := st.PushPaths()
	return d - before[0], g - before[1]
}

func pathsNow(st *store.Store) [2]uint64 {
	d, g := st.PushPaths()
	return [2]uint64{d, g}
}

// The direct path stores a push to existing partitions of queues without a maxSize;
// a new partition or a capped queue goes the general way, and both answer alike.
func TestPushDirectAndGeneralPaths(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, admin := openStore(t, 4)
	ids := queue.NewIDGenerator()
	item := func(q, p, txid string) queue.PushItem {
		if txid == "" {
			txid = ids.New()
		}
		return queue.PushItem{Queue: q, Partition: p, Payload: json.RawMessage(`{"n":1}`), TransactionID: txid, MessageID: ids.New()}
	}

	before := pathsNow(st)
	res, err := st.MessageInsertBatch(ctx, []queue.PushItem{item("paths", "a", "")})
	require.NoError(t, err)
	require.Equal(t, queue.StatusQueued, res[0].Status)
	d, g := pathCounts(st, before)
	require.Equal(t, [2]uint64{0, 1}, [2]uint64{d, g}, "a new partition is created by the general path")

	before = pathsNow(st)
	items := []queue.PushItem{item("paths", "a", "dup-1"), item("paths", "a", "dup-1"), item("paths", "a", "")}
	res, err = st.MessageInsertBatch(ctx, items)
	require.NoError(t, err)
	d, g = pathCounts(st, before)
	require.Equal(t, [2]uint64{1, 0}, [2]uint64{d, g}, "an existing partition takes the direct path")
	require.Equal(t, queue.StatusQueued, res[0].Status)
	require.Equal(t, items[0].MessageID, res[0].MessageID)
	require.Equal(t, queue.StatusDuplicate, res[1].Status, "the second item with one transaction id")
	require.Equal(t, items[0].MessageID, res[1].MessageID, "a duplicate answers the stored message")
	require.Equal(t, queue.StatusQueued, res[2].Status)
	for i, r := range res {
		require.Equal(t, i, r.Index)
		require.Equal(t, res[0].PartitionID, r.PartitionID)
		require.Equal(t, items[i].TransactionID, r.TransactionID)
	}

	// Stored before: a duplicate of the stored message, found after the commit.
	res, err = st.MessageInsertBatch(ctx, []queue.PushItem{item("paths", "a", "dup-1")})
	require.NoError(t, err)
	require.Equal(t, queue.StatusDuplicate, res[0].Status)
	require.Equal(t, items[0].MessageID, res[0].MessageID)

	// Several partitions of two queues in one push: direct when all exist, in item order.
	_, err = st.MessageInsertBatch(ctx, []queue.PushItem{item("paths", "b", ""), item("paths-2", "a", "")})
	require.NoError(t, err)
	before = pathsNow(st)
	multi := []queue.PushItem{item("paths-2", "a", ""), item("paths", "b", ""), item("paths", "a", ""), item("paths-2", "a", "")}
	res, err = st.MessageInsertBatch(ctx, multi)
	require.NoError(t, err)
	d, g = pathCounts(st, before)
	require.Equal(t, [2]uint64{1, 0}, [2]uint64{d, g})
	require.Equal(t, res[0].PartitionID, res[3].PartitionID)
	require.NotEqual(t, res[0].PartitionID, res[1].PartitionID)
	for i, r := range res {
		require.Equal(t, queue.StatusQueued, r.Status, "item %d", i)
		require.Equal(t, multi[i].Queue, r.Queue)
		require.Equal(t, multi[i].Partition, r.Partition)
	}
	var inOrder bool
	require.NoError(t, admin.QueryRow(ctx, `SELECT bool_and(ok) FROM (
		SELECT (created_at, id) > lag((created_at, id)) OVER (PARTITION BY partition_id ORDER BY created_at, id)
		       OR lag(id) OVER (PARTITION BY partition_id ORDER BY created_at, id) IS NULL AS ok,
		       id::text = ANY ($1::text[]) AS mine
		FROM queen.messages) x WHERE mine`, []string{multi[0].MessageID, multi[3].MessageID}).Scan(&inOrder))
	require.True(t, inOrder)
	var firstBefore bool
	require.NoError(t, admin.QueryRow(ctx, `SELECT (a.created_at, a.id) < (b.created_at, b.id)
		FROM queen.messages a, queen.messages b WHERE a.id = $1::uuid AND b.id = $2::uuid`,
		multi[0].MessageID, multi[3].MessageID).Scan(&firstBefore))
	require.True(t, firstBefore, "items of one partition are stored in item order")

	// One pair missing: the whole push goes the general way, nothing stored twice.
	before = pathsNow(st)
	res, err = st.MessageInsertBatch(ctx, []queue.PushItem{item("paths", "a", "mixed-1"), item("paths", "new", "mixed-2")})
	require.NoError(t, err)
	d, g = pathCounts(st, before)
	require.Equal(t, [2]uint64{0, 1}, [2]uint64{d, g})
	require.Equal(t, queue.StatusQueued, res[0].Status)
	require.Equal(t, queue.StatusQueued, res[1].Status)
	var n int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM queen.messages WHERE transaction_id IN ('mixed-1', 'mixed-2')`).Scan(&n))
	require.Equal(t, 2, n)

	// A queue with a maxSize (set through queen's configure, which records it) is
	// counted by the general path, which refuses past it.
	_, err = admin.Exec(ctx, `UPDATE queen.queues SET max_queue_size = 9,
		queen_options = coalesce(queen_options, '{}') || '{"maxSize": 9}' WHERE name = 'paths'`)
	require.NoError(t, err)
	before = pathsNow(st)
	res, err = st.MessageInsertBatch(ctx, []queue.PushItem{item("paths", "a", ""), item("paths", "a", "")})
	require.NoError(t, err)
	d, g = pathCounts(st, before)
	require.Equal(t, [2]uint64{0, 1}, [2]uint64{d, g})
	require.Equal(t, queue.StatusQueued, res[0].Status)
	require.Equal(t, "full", res[1].Status, "9 messages stored in queue paths")
}

// The partition's head, the ready rows and every column pushed are what the general
// path writes.
func TestPushDirectWritesHeadsReadyRowsAndColumns(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, admin := openStore(t, 4)
	ids := queue.NewIDGenerator()
	_, err := st.MessageInsertBatch(ctx, benchItems(ids, 1, "p1"))
	require.NoError(t, err)
	_, err = st.MessageInsertBatch(ctx, benchItems(ids, 1, "p2"))
	require.NoError(t, err)
	// A wildcard consumer group registered on the queue, its ready rows gone.
	_, err = admin.Exec(ctx, `INSERT INTO queen.queue_consumers (queue_id, consumer_group)
		SELECT id, 'g' FROM queen.queues WHERE name = 'bench'`)
	require.NoError(t, err)
	_, err = admin.Exec(ctx, `DELETE FROM queen.partition_ready`)
	require.NoError(t, err)

	before := pathsNow(st)
	items := benchItems(ids, 3, "p2")
	items[0].TraceID = "0190b6a4-6a0e-7c3e-9d5e-2f1a1b2c3d4e"
	items[1].ProducerSub, items[1].Encrypted = "alice", true
	items[2].Traceparent, items[2].Tracestate = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "k=v"
	res, err := st.MessageInsertBatch(ctx, items)
	require.NoError(t, err)
	d, g := pathCounts(st, before)
	require.Equal(t, [2]uint64{1, 0}, [2]uint64{d, g})

	var head string
	require.NoError(t, admin.QueryRow(ctx, `SELECT pl.last_message_id::text FROM queen.partition_lookup pl
		WHERE pl.partition_id = $1::uuid`, res[2].PartitionID).Scan(&head))
	require.Equal(t, items[2].MessageID, head, "the head is the push's last message")
	var ready []string
	rows, err := admin.Query(ctx, `SELECT p.name FROM queen.partition_ready r JOIN queen.partitions p ON p.id = r.partition_id
		WHERE r.consumer_group = 'g' ORDER BY p.name`)
	require.NoError(t, err)
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		ready = append(ready, name)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"p2"}, ready, "the partition written has work for the group")

	type stored struct {
		Trace, Sub, Parent, State *string
		Enc                       bool
		Payload                   string
	}
	for i, it := range items {
		var s stored
		require.NoError(t, admin.QueryRow(ctx, `SELECT trace_id::text, producer_sub, traceparent, tracestate, is_encrypted, payload::text
			FROM queen.messages WHERE id = $1::uuid AND transaction_id = $2`, it.MessageID, it.TransactionID).
			Scan(&s.Trace, &s.Sub, &s.Parent, &s.State, &s.Enc, &s.Payload))
		orNil := func(v string) *string {
			if v == "" {
				return nil
			}
			return &v
		}
		require.Equal(t, stored{orNil(it.TraceID), orNil(it.ProducerSub), orNil(it.Traceparent), orNil(it.Tracestate),
			it.Encrypted, s.Payload}, s, "item %d", i)
		require.JSONEq(t, string(benchPayload), s.Payload)
	}
}

// Concurrent direct pushes to the same partitions: every message stored once, stamps
// strictly increasing per partition, and the head at the newest.
func TestPushDirectConcurrentStampsAndHeads(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, admin := openStore(t, 8)
	ids := queue.NewIDGenerator()
	for _, p := range []string{"h0", "h1"} {
		_, err := st.MessageInsertBatch(ctx, benchItems(ids, 1, p))
		require.NoError(t, err)
	}
	before := pathsNow(st)
	const workers, pushes = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range pushes {
				items := benchItems(ids, 1+i%3, fmt.Sprintf("h%d", (w+i)%2))
				if i%4 == 0 { // a push over both partitions
					items = append(items, benchItems(ids, 1, fmt.Sprintf("h%d", (w+i+1)%2))...)
				}
				for k := range items {
					items[k].TransactionID = fmt.Sprintf("w%d-i%d-k%d", w, i, k)
				}
				if _, err := st.MessageInsertBatch(ctx, items); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	d, g := pathCounts(st, before)
	require.Equal(t, [2]uint64{workers * pushes, 0}, [2]uint64{d, g})

	// One timestamp per partition per push, each later than the partition's previous.
	var shared, badHeads int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM (SELECT partition_id, created_at FROM queen.messages
		WHERE transaction_id LIKE 'w%' GROUP BY 1, 2
		HAVING count(DISTINCT split_part(transaction_id, '-k', 1)) > 1) x`).Scan(&shared))
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM queen.partition_lookup pl
		WHERE NOT EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = pl.partition_id
		                  AND m.created_at = pl.last_message_created_at AND m.id = pl.last_message_id)
		   OR EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = pl.partition_id
		              AND (m.created_at, m.id) > (pl.last_message_created_at, pl.last_message_id))`).Scan(&badHeads))
	require.Zero(t, shared, "two pushes shared a timestamp in one partition")
	require.Zero(t, badHeads, "every head is its partition's newest message")
	var stored int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM queen.messages WHERE transaction_id LIKE 'w%'`).Scan(&stored))
	want := 0
	for i := range pushes {
		want += 1 + i%3
		if i%4 == 0 {
			want++
		}
	}
	require.Equal(t, workers*want, stored)
}

// A push to one partition answers each item with its own message, whatever order its
// stored messages come back in: a duplicate in the middle is answered with the first
// item's message, and a message id written in another form than PostgreSQL's
// (upper case) is still matched to its item.
func TestPushDirectOnePartitionAnswersEveryItem(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, admin := openStore(t, 4)
	ids := queue.NewIDGenerator()
	item := func(txid string) queue.PushItem {
		return queue.PushItem{Queue: "one", Partition: "p", Payload: json.RawMessage(`{"n":1}`), TransactionID: txid, MessageID: ids.New()}
	}
	_, err := st.MessageInsertBatch(ctx, []queue.PushItem{item("first")})
	require.NoError(t, err)

	items := []queue.PushItem{item("t1"), item("t2"), item("t1"), item("t3"), item("t4")}
	items[3].MessageID = strings.ToUpper(items[3].MessageID)
	before := pathsNow(st)
	res, err := st.MessageInsertBatch(ctx, items)
	require.NoError(t, err)
	d, g := pathCounts(st, before)
	require.Equal(t, [2]uint64{1, 0}, [2]uint64{d, g})
	require.Len(t, res, len(items))
	var pid string
	require.NoError(t, admin.QueryRow(ctx, `SELECT p.id::text FROM queen.partitions p
		JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'one' AND p.name = 'p'`).Scan(&pid))
	for i, r := range res {
		require.Equal(t, i, r.Index)
		require.Equal(t, pid, r.PartitionID, "item %d", i)
		require.Equal(t, items[i].TransactionID, r.TransactionID, "item %d", i)
		if i == 2 {
			require.Equal(t, queue.StatusDuplicate, r.Status)
			require.Equal(t, items[0].MessageID, r.MessageID, "the duplicate answers the first item's message")
			continue
		}
		require.Equal(t, queue.StatusQueued, r.Status, "item %d", i)
		require.Equal(t, items[i].MessageID, r.MessageID, "item %d", i)
		var txid string
		require.NoError(t, admin.QueryRow(ctx, `SELECT transaction_id FROM queen.messages WHERE id = $1::uuid`,
			r.MessageID).Scan(&txid))
		require.Equal(t, items[i].TransactionID, txid, "item %d is stored under its own id", i)
	}
}
