package queue

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHazardIDCounterOverflow: upstream's 12-bit per-millisecond
// counter wraps after 4096 ids in one millisecond and breaks monotonicity. With the
// clock frozen, 3 × 4096 + 10 ids must still strictly increase, carrying into the
// following milliseconds instead of wrapping; and when the clock catches up, ids go
// on increasing.
func TestHazardIDCounterOverflow(t *testing.T) {
	t.Parallel()

	frozen := time.UnixMilli(1_700_000_000_000)
	now := frozen
	g := NewIDGenerator()
	g.nowFunc = func() time.Time { return now }

	const n = 3*4096 + 10
	prev := ""
	for i := range n {
		id := g.New()
		require.True(t, IsUUID(id), id)
		require.Equal(t, byte('7'), id[14], "version 7: %s", id)
		require.Contains(t, "89ab", string(id[19]), "variant 10: %s", id)
		require.Greater(t, id, prev, "id %d after %d ids in one millisecond", i, i)
		prev = id
	}
	require.Equal(t, frozen.UnixMilli()+3, idMillis(t, prev), "the counter carried into the next milliseconds")

	now = frozen.Add(time.Millisecond) // behind the carried time: ids keep increasing
	id := g.New()
	require.Greater(t, id, prev)
	now = frozen.Add(time.Second)
	id2 := g.New()
	require.Greater(t, id2, id)
	require.Equal(t, now.UnixMilli(), idMillis(t, id2), "back on the wall clock once it is ahead")
}

// idMillis returns the 48-bit millisecond timestamp of a UUIDv7.
func idMillis(t *testing.T, id string) int64 {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(id, "-", "")[:12])
	require.NoError(t, err)
	var ms int64
	for _, x := range b {
		ms = ms<<8 | int64(x)
	}
	return ms
}

// TestIDAppendMatchesNew: ids made in batches by Append interleave with New's in one
// strictly increasing sequence, carry the counter across milliseconds the same way,
// and are well-formed and distinct.
func TestIDAppendMatchesNew(t *testing.T) {
	t.Parallel()

	frozen := time.UnixMilli(1_700_000_000_000)
	g := NewIDGenerator()
	g.nowFunc = func() time.Time { return frozen }

	var all []string
	all = g.Append(all, 0)
	require.Empty(t, all)
	for _, n := range []int{1, 100, 4000, 3, 5000} {
		all = append(all, g.New())
		all = g.Append(all, n)
	}
	seen := make(map[string]bool, len(all))
	for i, id := range all {
		require.True(t, IsUUID(id), id)
		require.Equal(t, byte('7'), id[14], "version 7: %s", id)
		require.Contains(t, "89ab", string(id[19]), "variant 10: %s", id)
		if i > 0 {
			require.Greater(t, id, all[i-1], "id %d", i)
		}
		require.False(t, seen[id], "id %d repeated", i)
		seen[id] = true
	}
	// 9109 ids in a frozen millisecond: 4096 per millisecond, so the last is 2 ahead.
	require.Equal(t, frozen.UnixMilli()+2, idMillis(t, all[len(all)-1]))
	next := g.New()
	require.Greater(t, next, all[len(all)-1], "New goes on after the batch")
	require.Equal(t, frozen.UnixMilli()+2, idMillis(t, next))
}
