package analytics

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// TestPartialFlushesAddUpToOneFlush records the same minute of activity twice: once
// flushed in three parts (two while the minute is open, the rest when it closes), as
// QUEEN_ANALYTICS_FLUSH_INTERVAL below a minute does, once flushed whole. Every row of
// every analytics table ends up the same, counters, sums, averages, minima and maxima
// alike.
func TestPartialFlushesAddUpToOneFlush(t *testing.T) {
	t.Parallel()
	minute := time.Now().UTC().Truncate(time.Minute).Add(-10 * time.Minute)
	at := func(s int) time.Time { return minute.Add(time.Duration(s) * time.Second) }
	record := func(rc *recorder, from, to int) {
		for s := from; s < to; s++ {
			rc.recordPush(at(s), []queue.PushResult{{Queue: "q", Status: queue.StatusQueued},
				{Queue: "r", Status: queue.StatusQueued}})
			rc.recordPop(at(s), queue.PopRequest{Queue: "q"}, queue.PopResult{Queue: "q", Messages: []queue.Message{
				{CreatedAt: at(s).Add(-time.Duration(s*37%1000) * time.Millisecond)}}}, nil)
			rc.recordAck(at(s), []queue.Ack{{Status: "completed"}}, []queue.AckResult{{Success: s%4 != 0, QueueName: "q"}})
			sys := make(systemSample)
			sys.observe("memory", "rss_bytes", float64(1000+s*s%97))
			rc.observe(gaugeSample{at: at(s), lagMs: float64(s % 7), parked: map[string]int{"q": s % 3, "r": 1},
				parkedAll: s%3 + 1, freeSlots: int64(8 - s%5), poolSize: int64(8 + s/30), system: sys})
		}
	}
	flush := func(t *testing.T, st *store.Store, rc *recorder, current time.Time, all bool) {
		t.Helper()
		f, _, err := rc.take(current, all)
		require.NoError(t, err)
		require.NoError(t, st.ActivityAdd(t.Context(), f))
	}
	open := func(t *testing.T) (*store.Store, *pgxpool.Pool) {
		t.Helper()
		url := pgtest.NewDBURL(t)
		st, err := store.Open(store.Options{ConnString: url, MaxConns: 2})
		require.NoError(t, err)
		t.Cleanup(st.Close)
		pool, err := pgxpool.New(t.Context(), url)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		return st, pool
	}
	// rows renders every row of the analytics tables but their write time.
	rows := func(t *testing.T, pool *pgxpool.Pool) map[string][]string {
		t.Helper()
		out := make(map[string][]string)
		for _, table := range []string{"queue_activity", "worker_activity", "queue_parked_activity", "system_activity"} {
			r, err := pool.Query(t.Context(), `SELECT (to_jsonb(t) - 'updated_at')::text FROM queen.`+table+` t ORDER BY 1`)
			require.NoError(t, err)
			for r.Next() {
				var doc string
				require.NoError(t, r.Scan(&doc))
				out[table] = append(out[table], doc)
			}
			require.NoError(t, r.Err())
		}
		return out
	}

	partStore, partPool := open(t)
	parts := newRecorder("h", "w", 1, minute, time.Minute)
	record(parts, 0, 20)
	flush(t, partStore, parts, minute, true)
	record(parts, 20, 45)
	flush(t, partStore, parts, minute, true)
	record(parts, 45, 60)
	flush(t, partStore, parts, minute.Add(time.Minute), false)

	wholeStore, wholePool := open(t)
	whole := newRecorder("h", "w", 1, minute, time.Minute)
	record(whole, 0, 60)
	flush(t, wholeStore, whole, minute.Add(time.Minute), false)

	want := rows(t, wholePool)
	require.Len(t, want["queue_activity"], 2)
	require.Len(t, want["worker_activity"], 1)
	require.Len(t, want["queue_parked_activity"], 2)
	require.Len(t, want["system_activity"], 1)
	require.Equal(t, want, rows(t, partPool))

	var w map[string]any
	require.NoError(t, json.Unmarshal([]byte(want["worker_activity"][0]), &w))
	require.EqualValues(t, 60, w["sample_count"])
	require.EqualValues(t, 4, w["min_free_slots"])
	require.EqualValues(t, 9, w["db_connections"], "the largest pool size")
	require.EqualValues(t, 6, w["max_event_loop_lag_ms"])
	require.EqualValues(t, 45, w["ack_success_count"])
}
