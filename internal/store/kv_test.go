package store_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// kvOps parses a JSON array of ops with the call limits.
func kvOps(t *testing.T, body string) []queue.KVOp {
	t.Helper()
	var raw []json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(body), &raw))
	ops, err := queue.ParseKVOps(raw, "operations", queue.KVCallLimits)
	require.NoError(t, err)
	return ops
}

func TestKVApply(t *testing.T) {
	t.Parallel()
	st, db := openStore(t, 16)
	now := time.Date(2026, 8, 17, 12, 0, 0, 0, time.UTC)
	apply := func(t *testing.T, tenant string, at time.Time, body string) queue.KVOutcome {
		t.Helper()
		out, err := st.KVApply(t.Context(), tenant, at, kvOps(t, body))
		require.NoError(t, err)
		return out
	}

	t.Run("WritesThenReadsSeeThem", func(t *testing.T) {
		t.Parallel()
		out := apply(t, "", now, `[
			{"op":"getMany","ns":"w","keys":["b","a","zz"]},
			{"op":"put","ns":"w","key":"b","value":{"x":1},"forever":true},
			{"op":"get","ns":"w","key":"a"},
			{"op":"put","ns":"w","key":"a","value":null,"ttlSeconds":60},
			{"op":"incr","ns":"w","key":"n","delta":2.50,"forever":true}]`)
		require.Nil(t, out.Failed)
		r := out.Results
		require.Len(t, r, 5)
		// get a runs before put a (same key, input order) and misses.
		require.False(t, r[2].Found)
		require.True(t, r[3].Applied)
		require.JSONEq(t, `null`, string(r[3].Value))
		require.Equal(t, "2.5", string(r[4].Value), "incr trims trailing zeros")
		// getMany runs after the writes: rows sorted by key, missing in request order.
		require.Equal(t, []string{"a", "b"}, []string{r[0].Rows[0].Key, r[0].Rows[1].Key})
		require.Equal(t, []string{"zz"}, r[0].Missing)
		require.NotNil(t, r[0].Rows[0].ExpiresAt)
		require.Nil(t, r[0].Rows[1].ExpiresAt)
		require.NotEqual(t, r[1].Version, r[3].Version)
	})

	t.Run("ExpectAndPutIfAbsent", func(t *testing.T) {
		t.Parallel()
		first := apply(t, "", now, `[{"op":"putIfAbsent","ns":"e","key":"k","value":1,"forever":true}]`).Results[0]
		require.True(t, first.Applied)
		lost := apply(t, "", now, `[{"op":"putIfAbsent","ns":"e","key":"k","value":2,"forever":true}]`).Results[0]
		require.Equal(t, []any{false, "exists", "1", first.Version}, []any{lost.Applied, lost.Reason, string(lost.Value), lost.Version})
		stale := apply(t, "", now, fmt.Sprintf(`[{"op":"put","ns":"e","key":"k","value":3,"forever":true,"expect":%d}]`, first.Version+1000)).Results[0]
		require.Equal(t, "version", stale.Reason)
		absent := apply(t, "", now, `[{"op":"put","ns":"e","key":"nope","value":3,"forever":true,"expect":5}]`).Results[0]
		require.Equal(t, []any{false, "absent", "null", int64(0)}, []any{absent.Applied, absent.Reason, string(absent.Value), absent.Version})
		del := apply(t, "", now, fmt.Sprintf(`[{"op":"delete","ns":"e","key":"k","expect":%d}]`, first.Version)).Results[0]
		require.Equal(t, []any{true, "1", first.Version}, []any{del.Applied, string(del.Value), del.Version})
		gone := apply(t, "", now, `[{"op":"delete","ns":"e","key":"k"}]`).Results[0]
		require.Equal(t, "absent", gone.Reason)
	})

	t.Run("ExpiredRowsAreAbsentAndSwept", func(t *testing.T) {
		t.Parallel()
		apply(t, "", now, `[{"op":"put","ns":"x","key":"k","value":"v","ttlSeconds":10},
			{"op":"incr","ns":"x","key":"c","delta":5,"ttlSeconds":10}]`)
		later := now.Add(11 * time.Second)
		r := apply(t, "", later, `[{"op":"get","ns":"x","key":"k"},
			{"op":"putIfAbsent","ns":"x","key":"k","value":"w","forever":true},
			{"op":"incr","ns":"x","key":"c","delta":1,"forever":true}]`).Results
		require.False(t, r[0].Found)
		require.True(t, r[1].Applied, "an expired row is overwritten by expect 0")
		require.Equal(t, "1", string(r[2].Value), "an expired counter restarts at 0")
		apply(t, "", now, `[{"op":"put","ns":"x","key":"old","value":1,"ttlSeconds":1}]`)
		n, err := st.KVSweepBatch(t.Context(), later, 100)
		require.NoError(t, err)
		require.GreaterOrEqual(t, n, int64(1))
		var left int
		require.NoError(t, db.QueryRow(t.Context(), `SELECT count(*) FROM queen.kv_entries WHERE ns = 'x' AND key = 'old'`).Scan(&left))
		require.Zero(t, left)
	})

	t.Run("IncrLimitsAndType", func(t *testing.T) {
		t.Parallel()
		r := apply(t, "", now, `[{"op":"incr","ns":"i","key":"a","delta":5,"max":3,"forever":true},
			{"op":"put","ns":"i","key":"s","value":"text","forever":true}]`).Results
		require.Equal(t, []any{false, "limit", "0", int64(0)}, []any{r[0].Applied, r[0].Reason, string(r[0].Value), r[0].Version})
		r = apply(t, "", now, `[{"op":"incr","ns":"i","key":"s","delta":1,"forever":true},
			{"op":"incr","ns":"i","key":"b","delta":3,"max":3,"ttlSeconds":60}]`).Results
		require.Equal(t, "type", r[0].Reason)
		require.True(t, r[1].Applied)
		r = apply(t, "", now, `[{"op":"incr","ns":"i","key":"b","delta":1,"max":3,"forever":true}]`).Results
		require.Equal(t, []any{"limit", "3"}, []any{r[0].Reason, string(r[0].Value)})
	})

	t.Run("RequiredRollsBackTheWholeCall", func(t *testing.T) {
		t.Parallel()
		apply(t, "", now, `[{"op":"put","ns":"r","key":"b","value":"taken","forever":true}]`)
		out := apply(t, "", now, `[{"op":"put","ns":"r","key":"a","value":1,"forever":true},
			{"op":"putIfAbsent","ns":"r","key":"b","value":2,"forever":true,"required":true}]`)
		require.NotNil(t, out.Failed)
		require.Equal(t, []any{1, "exists", `"taken"`}, []any{out.Failed.FailedIndex, out.Failed.Reason, string(out.Failed.Value)})
		r := apply(t, "", now, `[{"op":"get","ns":"r","key":"a"}]`).Results
		require.False(t, r[0].Found, "the put before the failed required op was rolled back")
	})

	t.Run("TenantsAreApart", func(t *testing.T) {
		t.Parallel()
		apply(t, "acme", now, `[{"op":"put","ns":"t","key":"k","value":"acme","forever":true}]`)
		require.False(t, apply(t, "bob", now, `[{"op":"get","ns":"t","key":"k"}]`).Results[0].Found)
		require.False(t, apply(t, "", now, `[{"op":"get","ns":"t","key":"k"}]`).Results[0].Found)
		nss, err := st.KVNamespaces(t.Context(), "bob")
		require.NoError(t, err)
		require.Empty(t, nss)
	})

	t.Run("GetPrefixPagesInByteOrder", func(t *testing.T) {
		t.Parallel()
		apply(t, "", now, `[{"op":"put","ns":"p","key":"a/B","value":1,"forever":true},
			{"op":"put","ns":"p","key":"a/a","value":2,"forever":true},
			{"op":"put","ns":"p","key":"a%","value":3,"forever":true},
			{"op":"put","ns":"p","key":"a_x","value":4,"forever":true},
			{"op":"put","ns":"p","key":"b/a","value":5,"forever":true}]`)
		r := apply(t, "", now, `[{"op":"getPrefix","ns":"p","prefix":"a/","limit":1}]`).Results[0]
		require.Equal(t, "a/B", r.Rows[0].Key, "byte order: B before a")
		require.True(t, r.Truncated)
		r = apply(t, "", now, `[{"op":"getPrefix","ns":"p","prefix":"a/","after":"a/B","limit":1}]`).Results[0]
		require.Equal(t, "a/a", r.Rows[0].Key)
		require.False(t, r.Truncated)
		require.Nil(t, r.NextAfter)
		r = apply(t, "", now, `[{"op":"getPrefix","ns":"p","prefix":"a%"}]`).Results[0]
		require.Len(t, r.Rows, 1, "% is a plain byte")
	})
}

// TestKVPutIfAbsentRace races putIfAbsent on one key from many goroutines: exactly
// one applies, every loser reports exists with the winner's version.
func TestKVPutIfAbsentRace(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t, 16)
	const n = 12
	var wg sync.WaitGroup
	results := make([]queue.KVResult, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			ops := kvOps(t, fmt.Sprintf(`[{"op":"putIfAbsent","ns":"race","key":"k","value":%d,"forever":true}]`, i))
			out, err := st.KVApply(t.Context(), "", time.Now(), ops)
			errs[i] = err
			if err == nil {
				results[i] = out.Results[0]
			}
		})
	}
	close(start)
	wg.Wait()
	applied := 0
	var winner int64
	for i := range n {
		require.NoError(t, errs[i])
		if results[i].Applied {
			applied++
			winner = results[i].Version
		}
	}
	require.Equal(t, 1, applied)
	for i := range n {
		if !results[i].Applied {
			require.Equal(t, queue.KVReasonExists, results[i].Reason)
			require.Equal(t, winner, results[i].Version)
		}
	}

}
