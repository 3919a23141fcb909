package daemon_test

import (
	"math"
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

// GOMEMLIMIT from the configuration sets the runtime's soft memory limit, queen's
// default included; off lifts it. Not parallel, as above: the limit is process-wide.
func TestDaemonAppliesGOMEMLIMIT(t *testing.T) {
	before := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	current := func() int64 { return debug.SetMemoryLimit(-1) } // -1 reads without setting

	tb := startBroker(t, "GOMEMLIMIT=40MiB")
	require.Equal(t, int64(40<<20), current(), "GOMEMLIMIT=40MiB")
	require.NoError(t, tb.stop(t))

	tb = startBroker(t) // queen's default
	require.Equal(t, int64(24<<20), current(), "the default")
	require.NoError(t, tb.stop(t))

	debug.SetMemoryLimit(64 << 20)
	startBroker(t, "GOMEMLIMIT=off")
	require.Equal(t, int64(math.MaxInt64), current(), "off")
}
