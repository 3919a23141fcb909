package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadUnknownQueenVariable(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct{ name, env, want string }{
		{"MissingLetter", "QUEEN_MAX_BODY_BYTE=5",
			"config: QUEEN_MAX_BODY_BYTE: unknown variable (queen refuses unknown QUEEN_* variables to catch typos); did you mean QUEEN_MAX_BODY_BYTES?"},
		{"Transposed", "QUEEN_LOG_FROMAT=text", "did you mean QUEEN_LOG_FORMAT?"},
		{"UnusedUpstreamNameIsAHintToo", "QUEEN_SYNC_SECRE=x", "did you mean QUEEN_SYNC_SECRET?"},
		{"NothingClose", "QUEEN_TOTALLY_DIFFERENT=1", "config: QUEEN_TOTALLY_DIFFERENT: unknown variable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			msg := loadErr(t, tc.env)
			require.Contains(t, msg, tc.want)
			_, value, _ := strings.Cut(tc.env, "=")
			require.NotContains(t, msg, "="+value, "the value of an unknown variable may be a misspelled secret")
		})
	}
	require.NotContains(t, loadErr(t, "QUEEN_TOTALLY_DIFFERENT=1"), "did you mean")
}

func TestLoadIgnoresNonQueenAndClientVariables(t *testing.T) {
	t.Parallel()

	c := mustLoad(t, "PATH=/usr/bin", "HOME=/root", "PG_HOTS=typo-but-not-ours",
		"QUEEN_SERVER=http://localhost:6632", "QUEEN_TOKEN=t", "QUEEN_CONTEXT=prod",
		"QUEEN_CONFIG=/etc/x", "QUEEN_TEST_DATABASE_URL=postgres://x")
	require.Empty(t, c.Warnings())
}

func TestLoadWarnsAboutUnusedUpstreamVariables(t *testing.T) {
	t.Parallel()

	c := mustLoad(t,
		"NUM_WORKERS=4", "SIDECAR_POOL_SIZE=50", "QUEEN_VEGAS_ALPHA=3", "QUEEN_PUSH_MAX_HOLD_MS=5",
		"QUEEN_STREAMS_STATE_GET_MAX_CONCURRENT=16", "QUEEN_UDP_PEERS=a,b", "QUEEN_SYNC_SECRET=hunter2",
		"QUEEN_CONCURRENCY_MODE=static", "STATS_HISTORY_RETENTION_DAYS=7",
		"WORKER_ID=", // set but empty is unset: no warning
	)
	w := c.Warnings()
	require.Len(t, w, 9, strings.Join(w, "\n"))
	require.Contains(t, w, `NUM_WORKERS="4" is accepted but unused by this broker: `+
		"queen has no worker event loops; the Go runtime schedules requests")
	require.Contains(t, w, "QUEEN_SYNC_SECRET=<redacted> is accepted but unused by this broker: "+
		"replicas coordinate through PostgreSQL LISTEN/NOTIFY; there is no UDP sync or its caches")
	require.NotContains(t, strings.Join(w, "\n"), "hunter2")
	require.True(t, strings.HasPrefix(w[0], "NUM_WORKERS"), "warnings are sorted")
}

func TestUnusedUpstreamCoversEveryEngineVariable(t *testing.T) {
	t.Parallel()

	names := make(map[string]bool)
	for _, g := range unusedUpstream() {
		require.NotEmpty(t, g.reason)
		for _, n := range g.names {
			require.False(t, names[n], "listed twice: %s", n)
			names[n] = true
		}
	}
	require.Len(t, engineTypes(), 9)
	for _, typ := range engineTypes() {
		for _, suffix := range []string{"PREFERRED_BATCH_SIZE", "MAX_HOLD_MS", "MAX_BATCH_SIZE", "MAX_CONCURRENT"} {
			require.True(t, names["QUEEN_"+typ+"_"+suffix], typ+"_"+suffix)
		}
	}
	for _, n := range []string{
		"NUM_WORKERS", "WORKER_ID", "DB_THREAD_POOL_SERVICE_THREADS", "RESPONSE_TIMER_INTERVAL_MS",
		"RESPONSE_BATCH_SIZE", "RESPONSE_BATCH_MAX", "SIDECAR_POOL_SIZE", "LIBQUEEN_INFLIGHT_DEADLINE_MS",
		"QUEEN_VEGAS_RTT_MIN_WINDOW_SEC", "SIDECAR_MICRO_BATCH_WAIT_MS", "SIDECAR_MAX_PENDING_COUNT",
		"QUEUE_BACKOFF_CLEANUP_THRESHOLD", "QUEEN_SYNC_RECV_BUFFER_MB", "QUEEN_CACHE_PARTITION_TTL_MS",
	} {
		require.True(t, names[n], n)
	}
	for _, s := range table() {
		require.False(t, names[s.name], "%s is both a setting and unused", s.name)
	}
}

func TestLevenshtein(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "abc", 3}, {"kitten", "sitting", 3},
		{"QUEEN_LOG_FROMAT", "QUEEN_LOG_FORMAT", 2}, {"PORT", "PORT", 0},
	} {
		t.Run(tc.a+"To"+tc.b, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, levenshtein(tc.a, tc.b))
			require.Equal(t, tc.want, levenshtein(tc.b, tc.a))
		})
	}
}
