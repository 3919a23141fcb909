package broker_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/spool"
	"github.com/queenmq/queen/internal/store"
	"github.com/queenmq/queen/internal/testlog"
)

// spoolBundle is a broker with a spool in its own directory, its background loops
// (the drainer among them) running, over a fresh database.
type spoolBundle struct {
	*testBundle
	dbURL string
	dir   string
	sp    *spool.Spool
	log   *testlog.Buffer // the broker's log
}

// setupSpool runs prepare on the spool directory before the spool opens (nil: an
// empty spool), and builds the broker from the default config changed by opts.
func setupSpool(t *testing.T, prepare func(dir string), opts ...func(*broker.Config)) *spoolBundle {
	t.Helper()
	return setupSpoolWith(t, spool.Options{}, prepare, opts...)
}

// setupSpoolWith is setupSpool with the spool opened with so (its Dir set here).
func setupSpoolWith(t *testing.T, so spool.Options, prepare func(dir string), opts ...func(*broker.Config)) *spoolBundle {
	t.Helper()
	dbURL := pgtest.NewDBURL(t)
	dir := t.TempDir()
	if prepare != nil {
		prepare(dir)
	}
	so.Dir = dir
	sp, err := spool.Open(so)
	require.NoError(t, err)
	st, err := store.Open(store.Options{ConnString: dbURL, MaxConns: 8, ConnectTimeout: 2 * time.Second})
	require.NoError(t, err)
	cfg := withConfig(opts...)
	cfg.Spool = sp
	cfg.SpoolFlushInterval = 20 * time.Millisecond
	log := &testlog.Buffer{}
	b := broker.New(cfg, st, slog.New(slog.NewTextHandler(log, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		require.NoError(t, sp.Close())
		st.Close()
	})
	return &spoolBundle{testBundle: &testBundle{b: b}, dbURL: dbURL, dir: dir, sp: sp, log: log}
}

// waitDrainPass waits, up to 20 s, for a completed drain pass of b for which ok
// holds (the latest one, if it does already), and returns it.
func waitDrainPass(t *testing.T, b *broker.Broker, what string, ok func(broker.DrainPass) bool) broker.DrainPass {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		last, next := b.DrainProgress()
		if ok(last) {
			return last
		}
		select {
		case <-next:
		case <-deadline.C:
			t.Fatalf("no drain pass %s in 20 s; the latest: %+v", what, last)
		}
	}
}

// waitDrained waits for a drain pass that left the spool empty: one that ran to the
// end (neither held by the push pause nor stopped by a failure), with nothing
// pending afterwards.
func (sb *spoolBundle) waitDrained(t *testing.T) spool.Stats {
	t.Helper()
	waitDrainPass(t, sb.b, "that empties the spool", func(p broker.DrainPass) bool {
		return p.N > 0 && !p.Held && p.Err == nil && sb.sp.Stats().PendingRecords == 0
	})
	return sb.sp.Stats()
}

// popAll pops queue q with group until it is empty (autoAck) and returns the
// transaction ids in delivery order per partition.
func (sb *spoolBundle) popAll(t *testing.T, q, group string) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	for i := 0; ; i++ {
		require.Less(t, i, 1000)
		res := sb.pop(t, queue.PopRequest{Queue: q, ConsumerGroup: group, Batch: 100, AutoAck: true})
		if len(res.Messages) == 0 {
			return got
		}
		for _, m := range res.Messages {
			got[m.Partition] = append(got[m.Partition], m.TransactionID)
		}
	}
}

// TestPushSpoolsWhileDatabaseUnreachable cuts the broker's database off: pushes are
// answered buffered from the spool, and once the database is back the drainer
// replays them in order, idempotently (a transaction id stored before the outage
// stays one message).
func TestPushSpoolsWhileDatabaseUnreachable(t *testing.T) {
	t.Parallel()
	sb := setupSpool(t, nil)
	before := sb.push(t, item("out", "p1", "tx-0", `{"n":0}`))
	require.Equal(t, queue.StatusQueued, before[0].Status)

	restore := pgtest.CutOff(t, sb.dbURL)
	var items []queue.PushItem
	for i := 1; i <= 20; i++ {
		items = append(items, item("out", fmt.Sprintf("p%d", i%2+1), fmt.Sprintf("tx-%d", i), fmt.Sprintf(`{"n":%d}`, i)))
	}
	items = append(items, item("out", "p1", "tx-0", `{"n":"again"}`)) // already stored
	res := sb.push(t, items...)
	for i, r := range res {
		require.Equal(t, queue.StatusBuffered, r.Status, "item %d", i)
		require.Equal(t, items[i].TransactionID, r.TransactionID)
	}
	// A push without transaction id: the generated one is spooled with it.
	gen := sb.push(t, queue.PushItem{Queue: "out", Partition: "p2", Payload: json.RawMessage(`1`)})
	require.Equal(t, queue.StatusBuffered, gen[0].Status)
	require.NotEmpty(t, gen[0].TransactionID)
	require.EqualValues(t, 22, sb.sp.Stats().PendingRecords)
	require.False(t, sb.b.DatabaseReachable())
	// Past the half second in which pushes skip the database: still unreachable, as
	// every replay attempt meanwhile finds it (queen_file_buffer_db_healthy 0).
	require.Never(t, sb.b.DatabaseReachable, time.Second, 20*time.Millisecond)

	restore()
	// Pushed while the spool still replays (or just after): stored after the spooled
	// records of its partition either way, never ahead of them.
	after := sb.push(t, item("out", "p1", "tx-after", `{"n":"after"}`))
	require.Contains(t, []string{queue.StatusBuffered, queue.StatusQueued}, after[0].Status)
	st := sb.waitDrained(t)
	require.GreaterOrEqual(t, st.Drained, uint64(22))
	require.Zero(t, st.QuarantinedRecords)

	got := sb.popAll(t, "out", "audit")
	var p1, p2 []string
	p1 = append(p1, "tx-0")
	for i := 1; i <= 20; i++ {
		if i%2 == 0 {
			p1 = append(p1, fmt.Sprintf("tx-%d", i))
		} else {
			p2 = append(p2, fmt.Sprintf("tx-%d", i))
		}
	}
	p1 = append(p1, "tx-after")
	p2 = append(p2, gen[0].TransactionID)
	require.Equal(t, map[string][]string{"p1": p1, "p2": p2}, got, "spool order per partition, no duplicate")
	require.True(t, sb.b.DatabaseReachable())
	entries, err := filepath.Glob(filepath.Join(sb.dir, "segment-*"))
	require.NoError(t, err)
	require.Empty(t, entries, "the spool shrank to nothing")
}

// TestPushPauseSpoolsAndDrainWakesLongPolls: with pushes paused, pushes
// are buffered and nothing reaches the database; switching it off replays them,
// and the replay wakes a long-poll parked meanwhile. The parked poll's re-check is an
// hour away and its own deadline 100 s: an answer within the 60 s the test waits can
// only come from the replay's wake, however slow the machine.
func TestPushPauseSpoolsAndDrainWakesLongPolls(t *testing.T) {
	t.Parallel()
	sb := setupSpool(t, nil, slowPolls(2*time.Minute))
	ctx := t.Context()
	_, _, err := sb.b.SetPushPause(ctx, true)
	require.NoError(t, err)
	res := sb.push(t, item("maint", "Default", "m-1", `{"a":1}`), item("maint", "Default", "m-2", `{"a":2}`))
	require.Equal(t, queue.StatusBuffered, res[0].Status)
	require.Equal(t, queue.StatusBuffered, res[1].Status)
	_, err = sb.b.QueueGet(ctx, "maint")
	require.ErrorIs(t, err, queue.ErrNotFound, "buffered pushes stay out of the database while pushes are paused")
	require.EqualValues(t, 2, sb.sp.Stats().PendingRecords)

	sb.configure(t, "maint", nil)
	popped := make(chan queue.PopResult, 1)
	go func() {
		req := queue.PopRequest{Queue: "maint", Batch: 10, Wait: true, Timeout: 100 * time.Second}
		if err := sb.b.NormalizePop(&req); err != nil {
			panic(err)
		}
		r, err := sb.b.Pop(context.Background(), req)
		if err != nil {
			panic(err)
		}
		popped <- r
	}()
	require.Eventually(t, func() bool { return sb.b.ParkedPolls() == 1 }, 10*time.Second, 5*time.Millisecond)
	_, _, err = sb.b.SetPushPause(ctx, false)
	require.NoError(t, err)
	select {
	case r := <-popped:
		require.NotEmpty(t, r.Messages)
		require.Equal(t, "m-1", r.Messages[0].TransactionID)
	case <-time.After(60 * time.Second):
		t.Fatal("the parked long-poll was not woken by the replay")
	}
	sb.waitDrained(t)
}

// TestSpoolHealthyAgainOnceDrained fills a spool capped by QUEEN_SPOOL_MAX_BYTES while
// pushes are paused: the push that does not fit is refused and the spool is marked
// failing. Once the pause ends and the drain empties it, the spool is accepting again
// and says so in the log, without a push having to find out.
func TestSpoolHealthyAgainOnceDrained(t *testing.T) {
	t.Parallel()
	sb := setupSpoolWith(t, spool.Options{MaxBytes: 1500}, nil)
	ctx := t.Context()
	_, _, err := sb.b.SetPushPause(ctx, true)
	require.NoError(t, err)
	for i := 0; ; i++ {
		require.Less(t, i, 100, "a spool of 1500 bytes never filled up")
		_, err := sb.b.Push(ctx, []queue.PushItem{item("capped", "Default", fmt.Sprintf("c-%d", i), `{"pad":"xxxxxxxxxxxxxxxxxxxx"}`)})
		if err != nil {
			require.ErrorIs(t, err, queue.ErrUnavailable)
			break
		}
	}
	require.False(t, sb.b.SpoolAccepting(), "a full spool takes no pushes")
	_, _, err = sb.b.SetPushPause(ctx, false)
	require.NoError(t, err)
	sb.waitDrained(t)
	require.Eventually(t, sb.b.SpoolAccepting, 10*time.Second, 10*time.Millisecond, "the drained spool accepting again")
	require.Eventually(t, func() bool { return strings.Contains(sb.log.String(), "spool writable again") },
		10*time.Second, 10*time.Millisecond, "logged: %s", sb.log.Tail(20))
}

// TestSpoolQuarantinesPoison: records the database refuses for a reason other than
// being unavailable (a full queue; an upstream record with an invalid queue name) go
// to the dead-letter file; the records around them are replayed.
func TestSpoolQuarantinesPoison(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("q", 300)
	sb := setupSpool(t, func(dir string) {
		var b []byte
		for _, q := range []string{"up", long, "up"} {
			body := fmt.Sprintf(`{"queue":%q,"partition":"Default","payload":{"q":%q},"failover":true,"transactionId":"%s-%d"}`,
				q, q[:2], q[:2], len(b))
			b = binary.LittleEndian.AppendUint32(b, uint32(len(body)))
			b = append(b, body...)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "failover_0190aaaa.buf"), b, 0o644))
	})
	sb.waitDrained(t)
	require.Len(t, sb.popAll(t, "up", "g")["Default"], 2, "the valid upstream records around the bad one")

	sb.configure(t, "small", func(o *queue.Options) { o.MaxSize = 1 })
	_, _, err := sb.b.SetPushPause(t.Context(), true)
	require.NoError(t, err)
	sb.push(t, item("small", "Default", "s-1", `1`), item("small", "Default", "s-2", `2`), item("other", "Default", "o-1", `3`))
	_, _, err = sb.b.SetPushPause(t.Context(), false)
	require.NoError(t, err)
	st := sb.waitDrained(t)
	require.EqualValues(t, 2, st.QuarantinedRecords, "the invalid name and the record beyond maxSize")
	require.Equal(t, map[string][]string{"Default": {"s-1"}}, sb.popAll(t, "small", "g"))
	require.Equal(t, map[string][]string{"Default": {"o-1"}}, sb.popAll(t, "other", "g"))
	dead, err := filepath.Glob(filepath.Join(sb.dir, "dead", "quarantine-*"))
	require.NoError(t, err)
	require.Len(t, dead, 1)
}

// TestSpoolCorruptionReplayed is the end-to-end corruption test: a spool file left
// with a flipped byte in the middle and a torn last record is replayed into the
// database except for the two broken records, which are reported.
func TestSpoolCorruptionReplayed(t *testing.T) {
	t.Parallel()
	const n = 12
	sb := setupSpool(t, func(dir string) {
		sp, err := spool.Open(spool.Options{Dir: dir})
		require.NoError(t, err)
		for i := range n {
			require.NoError(t, sp.Append(t.Context(), []queue.PushItem{item("damaged", "Default", fmt.Sprintf("d-%02d", i), `{"k":"v"}`)}))
		}
		require.NoError(t, sp.Close())
		files, err := filepath.Glob(filepath.Join(dir, "segment-*"))
		require.NoError(t, err)
		require.Len(t, files, 1)
		data, err := os.ReadFile(files[0])
		require.NoError(t, err)
		rec := (len(data) - 8) / n // equal-sized records after the 8-byte header
		data[8+5*rec+20] ^= 0x01   // inside record 5's body
		data = data[:len(data)-4]  // tear record 11
		require.NoError(t, os.WriteFile(files[0], data, 0o644))
	})
	st := sb.waitDrained(t)
	require.EqualValues(t, 2, st.CorruptRegions)
	var want []string
	for i := range n {
		if i != 5 && i != n-1 {
			want = append(want, fmt.Sprintf("d-%02d", i))
		}
	}
	require.Equal(t, map[string][]string{"Default": want}, sb.popAll(t, "damaged", "g"))
	t.Logf("corruption: %d records spooled, %d replayed, %d corrupt regions reported", n, len(want), st.CorruptRegions)
}
