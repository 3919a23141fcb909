package bench

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
)

func TestProcTimesReadsAProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	before, ppid, ok := procTimes(os.Getpid(), false)
	require.True(t, ok)
	require.Equal(t, os.Getppid(), ppid)
	spin := 0
	require.Eventually(t, func() bool {
		for range 1_000_000 {
			spin++
		}
		after, _, _ := procTimes(os.Getpid(), false)
		return after > before
	}, 30*time.Second, time.Millisecond, "this process's CPU time never grew")
	_, _, ok = procTimes(1<<30, false)
	require.False(t, ok, "no such process")
}

// The server's CPU time is its backends' too: a query's work shows in it, and it is
// what the CPU per message of a broker case counts for PostgreSQL.
func TestPostgresCPUCountsTheBackends(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	db := &database{pool: pgtest.NewDB(t)}
	pg, ok := findPostgres(t.Context(), db)
	require.True(t, ok, "the test server runs on this machine")
	before, ok := pg.read()
	require.True(t, ok)
	var n int64
	require.NoError(t, db.pool.QueryRow(t.Context(), `SELECT count(*) FROM generate_series(1, 5000000)`).Scan(&n))
	require.Equal(t, int64(5_000_000), n)
	after, ok := pg.read()
	require.True(t, ok)
	require.Greater(t, after-before, 50*time.Millisecond, "five million rows counted cost the server no CPU")

	s := cpuSample{postgres: 300 * time.Millisecond, bench: 100 * time.Millisecond, hasPostgres: true}
	per := s.perMessage(1000)
	require.Equal(t, 0.3, *per.Postgres)
	require.Nil(t, per.Broker, "no broker read")
	require.Equal(t, 0.1, per.Bench)
	require.Equal(t, "CPU ms/msg: PostgreSQL 0.300, broker -, queen-bench 0.100", per.String())
	require.Nil(t, s.perMessage(0))
}
