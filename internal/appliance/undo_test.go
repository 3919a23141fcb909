package appliance

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUndoUnwindsNewestFirst: a failed open closes what was opened, newest first, once.
func TestUndoUnwindsNewestFirst(t *testing.T) {
	t.Parallel()
	var closed []string
	var u Undo
	u.Push(func() { closed = append(closed, "listener") })
	u.Push(func() { closed = append(closed, "pool") })
	u.Push(func() { closed = append(closed, "spool") })
	u.Unwind()
	require.Equal(t, []string{"spool", "pool", "listener"}, closed)
	u.Unwind()
	require.Len(t, closed, 3, "an unwound stack is empty")
}
