package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
)

// The segment prototype is a measurement, but it must do the work it claims: deliver
// every message once, in offset order per partition, out of parts of segments, and
// move the cursor only on the lease holder's ack.
func TestSegmentPrototype(t *testing.T) {
	t.Parallel()

	group := queue.QueueModeGroup
	type testBundle struct {
		store *segStore
		pids  []string
	}
	setup := func(t *testing.T, p segPacking, partitions int) *testBundle {
		t.Helper()
		s := newSegStore(&database{pool: pgtest.NewDB(t)}, p)
		pids, err := s.create(t.Context(), partitions, []string{group})
		require.NoError(t, err)
		return &testBundle{store: s, pids: pids}
	}
	payloads := func(from, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = `{"s":` + strconv.Itoa(from+i) + `}`
		}
		return out
	}
	// cursor returns a partition's next offset and whether it is leased.
	cursor := func(t *testing.T, b *testBundle, pid string) (next int64, leased bool) {
		t.Helper()
		require.NoError(t, b.store.db.pool.QueryRow(t.Context(),
			`SELECT next_offset, worker_id IS NOT NULL FROM bench_seg.cursors WHERE partition_id = $1::uuid AND consumer_group = $2`,
			pid, group).Scan(&next, &leased))
		return next, leased
	}

	for _, p := range segPackings() {
		t.Run("ReadsTakePartsOfSegmentsAndAcksMoveTheCursor_"+string(p), func(t *testing.T) {
			t.Parallel()
			b := setup(t, p, 1)
			ctx, pid := t.Context(), b.pids[0]
			batch := newSegBatch(queue.NewIDGenerator(), p)
			sent := 0
			for _, n := range []int{3, 7, 1, 5} {
				first, err := b.store.push(ctx, batch, pid, payloads(sent, n))
				require.NoError(t, err)
				require.EqualValues(t, sent, first, "offsets follow the head")
				sent += n
			}
			var want int64
			for want < int64(sent) {
				r, err := b.store.claim(ctx, group, 4, "A")
				require.NoError(t, err)
				require.Equal(t, pid, r.partition)
				require.Len(t, r.msgs, min(4, sent-int(want)))
				for _, m := range r.msgs {
					require.Equal(t, want, m.offset)
					require.JSONEq(t, `{"s":`+strconv.FormatInt(want, 10)+`}`, m.payload)
					want++
				}
				next, leased := cursor(t, b, pid)
				require.Equal(t, r.msgs[0].offset, next, "the claim does not move the cursor")
				require.True(t, leased)
				none, err := b.store.claim(ctx, group, 4, "B")
				require.NoError(t, err)
				require.Empty(t, none.partition, "a leased partition is not claimed again")

				held, err := b.store.ack(ctx, r, group, "B")
				require.NoError(t, err)
				require.False(t, held, "an ack without the lease changes nothing")
				next, _ = cursor(t, b, pid)
				require.Equal(t, r.msgs[0].offset, next)

				held, err = b.store.ack(ctx, r, group, "A")
				require.NoError(t, err)
				require.True(t, held)
				next, leased = cursor(t, b, pid)
				require.Equal(t, want, next, "the ack moves the cursor past what was read")
				require.False(t, leased)
			}
			var ready int
			require.NoError(t, b.store.db.pool.QueryRow(ctx, `SELECT count(*) FROM bench_seg.ready`).Scan(&ready))
			require.Zero(t, ready, "the ack that reached the head dropped the ready row")
			r, err := b.store.claim(ctx, group, 4, "A")
			require.NoError(t, err)
			require.Empty(t, r.partition)
		})
		t.Run("ConcurrentProducersAndConsumersDeliverEachMessageOnceInOrder_"+string(p), func(t *testing.T) {
			t.Parallel()
			segConcurrent(t, setup(t, p, 4).store, group)
		})
	}
	t.Run("QuickCasesReportEveryPrototypeBesideItsCeiling", func(t *testing.T) {
		t.Parallel()
		opts := Options{Quick: true, Segments: true}
		opts.defaults()
		r := &runner{opts: opts, db: &database{pool: pgtest.NewDB(t)}, payload: makePayload(opts.PayloadBytes),
			win: window{warmup: opts.Warmup, duration: opts.Duration}, rep: &Report{}}
		require.NoError(t, r.segmentCases(t.Context()))
		cases := opts.segmentCaseList()
		require.Len(t, r.rep.Results, len(cases)*len(segPackings()))
		for _, c := range cases {
			for _, p := range segPackings() {
				res, ok := r.rep.Get("seg_" + string(p) + c.name[len("seg"):])
				require.True(t, ok, "%s %s", c.name, p)
				require.Positive(t, res.Value, res.Name)
				require.NotNil(t, res.Ceiling, res.Name)
				require.Positive(t, *res.Ceiling, res.Name)
			}
		}
		var left bool
		require.NoError(t, r.db.pool.QueryRow(t.Context(),
			`SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'bench_seg')`).Scan(&left))
		require.False(t, left, "the run drops its schema")
	})
}

// segConcurrent runs 3 producers (pushes of 1 to 7 messages, round robin over the
// store's partitions) and 3 consumers (the two-commit cycle, batch 4) at once, then
// checks that each partition's deliveries are exactly its offsets 0, 1, 2, … in
// order, each with the payload pushed at that offset.
func segConcurrent(t *testing.T, s *segStore, group string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var pids []string
	require.NoError(t, s.db.pool.QueryRow(ctx, `SELECT array_agg(partition_id::text) FROM bench_seg.heads`).Scan(&pids))
	const producers, pushes = 3, 40
	var (
		mu        sync.Mutex
		pushed    = map[string]map[int64]string{} // partition → offset → payload
		delivered = map[string][]segMsg{}
		wg        sync.WaitGroup
		errs      = make([]error, 6)
		done      atomic.Int32
	)
	for _, pid := range pids {
		pushed[pid] = map[int64]string{}
	}
	rr := newRoundRobin(len(pids))
	for w := range producers {
		wg.Go(func() {
			defer done.Add(1)
			b := newSegBatch(queue.NewIDGenerator(), s.packing)
			for k := range pushes {
				pid, n := pids[rr.take()], 1+(k*5+w)%7
				msgs := make([]string, n)
				for i := range msgs {
					msgs[i] = fmt.Sprintf(`{"w":%d,"k":%d,"i":%d}`, w, k, i)
				}
				first, err := s.push(ctx, b, pid, msgs)
				if err != nil {
					errs[w] = err
					return
				}
				mu.Lock()
				for i, m := range msgs {
					pushed[pid][first+int64(i)] = m
				}
				mu.Unlock()
			}
		})
	}
	cycle := s.cycleOp(group, 4, func(r segRead) {
		mu.Lock()
		delivered[r.partition] = append(delivered[r.partition], r.msgs...)
		mu.Unlock()
	})
	// A consumer stops once the producers are done and nothing is ready (every
	// partition drained, its ready row dropped by the ack that reached the head).
	pending := func() (bool, error) {
		var left bool
		err := s.db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM bench_seg.ready)`).Scan(&left)
		return left, err
	}
	for w := producers; w < 6; w++ {
		wg.Go(func() {
			for {
				n, err := cycle(ctx, w)
				if err == nil && n == 0 && done.Load() == producers {
					var left bool
					if left, err = pending(); err == nil && !left {
						return
					}
				}
				if err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	total := 0
	for _, pid := range pids {
		got := delivered[pid]
		require.Len(t, got, len(pushed[pid]), "every message of %s delivered once", pid)
		for i, m := range got {
			require.EqualValues(t, i, m.offset, "offset order in %s", pid)
			require.JSONEq(t, pushed[pid][m.offset], m.payload)
		}
		total += len(got)
		var next, head int64
		require.NoError(t, s.db.pool.QueryRow(ctx, `SELECT c.next_offset, h.next_offset FROM bench_seg.cursors c
			JOIN bench_seg.heads h USING (partition_id) WHERE c.partition_id = $1::uuid`, pid).Scan(&next, &head))
		require.Equal(t, head, next, "the cursor of %s reached its head", pid)
	}
	require.Positive(t, total)
}
