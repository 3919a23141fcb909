package daemon_test

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// GOGC from the configuration sets the garbage collector's target. Not parallel: the
// target is process-wide, and top-level parallel tests wait until sequential ones end.
func TestDaemonAppliesGOGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	tb := startBroker(t, "GOGC=150")
	require.Equal(t, 150, debug.SetGCPercent(100), "GOGC=150")
	require.NoError(t, tb.stop(t))

	startBroker(t) // queen's default
	require.Equal(t, 200, debug.SetGCPercent(100), "the default")
}
