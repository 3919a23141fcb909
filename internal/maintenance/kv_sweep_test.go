package maintenance_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/maintenance"
	"github.com/queenmq/queen/internal/queue"
)

func TestKVSweep(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	var raw []json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(`[
		{"op":"put","ns":"s","key":"a","value":1,"ttlSeconds":5},
		{"op":"put","ns":"s","key":"b","value":1,"ttlSeconds":5},
		{"op":"put","ns":"s","key":"c","value":1,"ttlSeconds":5},
		{"op":"put","ns":"s","key":"keep","value":1,"forever":true},
		{"op":"put","ns":"s","key":"later","value":1,"ttlSeconds":3600}]`), &raw))
	ops, err := queue.ParseKVOps(raw, "operations", queue.KVCallLimits)
	require.NoError(t, err)
	_, err = tb.st.KVApply(t.Context(), "", tb.clock(), ops)
	require.NoError(t, err)

	tb.now.Add(int64(10 * time.Second))
	sweep := job(t, maintenance.Jobs(tb.st, tb.settings()), maintenance.JobKVSweep)
	res, err := sweep.RunOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, int64(3), res.Rows)
	require.Equal(t, 2, res.Batches, "batches of BatchSize (2) until one comes back short")
	var left []string
	rows, err := tb.pool.Query(t.Context(), `SELECT key FROM queen.kv_entries ORDER BY key`)
	require.NoError(t, err)
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		left = append(left, k)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"keep", "later"}, left)
}
