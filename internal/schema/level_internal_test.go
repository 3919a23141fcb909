package schema

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLevelNumbersTheSQL(t *testing.T) {
	t.Parallel()

	require.Equal(t, levelVersion, Version(),
		"the SQL under internal/schema/sql changed: raise Level (now %d) by one and set levelVersion to %q, "+
			"so that a broker run with QUEEN_APPLY_SCHEMA=0 can tell an older schema from a newer one",
		Level, Version())
}
