package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseCPUTimes(t *testing.T) {
	stat := []byte("cpu  100 5 50 800 10 1 4 30 7 0\ncpu0 50 2 25 400 5 0 2 15 3 0\nintr 1 2 3\n")
	got, err := parseCPUTimes(stat)
	require.NoError(t, err)
	require.Equal(t, cpuTimes{total: 100 + 5 + 50 + 800 + 10 + 1 + 4 + 30, steal: 30}, got)

	later, err := parseCPUTimes([]byte("cpu  150 5 60 880 10 1 4 50 9 0\n"))
	require.NoError(t, err)
	require.InDelta(t, 20.0*100/160, stealPercent(got, later), 1e-9) // 20 of 160 ticks stolen
	require.Zero(t, stealPercent(later, later))

	_, err = parseCPUTimes([]byte("cpu  1 2 3 4\n"))
	require.ErrorContains(t, err, "want at least 9")
	_, err = parseCPUTimes([]byte("intr 1\n"))
	require.ErrorContains(t, err, "no cpu line")
}

// The machine the tests run on is Linux: the run's steal comes from its /proc/stat.
func TestReadCPUTimesOnThisMachine(t *testing.T) {
	a, ok, err := readCPUTimes()
	require.NoError(t, err)
	require.True(t, ok, "/proc/stat exists on Linux")
	require.Greater(t, a.total, a.steal)
}
