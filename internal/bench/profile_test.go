package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// tick is an op that completes one message per millisecond of (fake) time.
func tick(ctx context.Context, _ int) (int, error) {
	select {
	case <-ctx.Done():
		return 0, nil
	case <-time.After(time.Millisecond):
		return 1, nil
	}
}

func TestWindowAtStart(t *testing.T) {
	t.Parallel()

	t.Run("CalledAfterWarmupAndWaitedFor", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			begin := time.Now()
			var startedAt time.Duration
			waited := false
			win := window{warmup: 100 * time.Millisecond, duration: 300 * time.Millisecond, atStart: func() func() {
				startedAt = time.Since(begin)
				return func() { waited = true }
			}}
			m, err := win.run(t.Context(), 2, 0, nil, tick)
			require.NoError(t, err)
			require.Equal(t, 100*time.Millisecond, startedAt, "the profile starts as the warm-up ends")
			require.True(t, waited, "run waits for the profile before returning")
			require.False(t, m.inWarmup)
			require.Equal(t, 300*time.Millisecond, m.elapsed)
		})
	})
	t.Run("NotCalledWhenTheWorkRunsOutDuringWarmup", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			called := false
			win := window{warmup: 100 * time.Millisecond, duration: 300 * time.Millisecond, atStart: func() func() {
				called = true
				return func() {}
			}}
			m, err := win.run(t.Context(), 1, 10, nil, tick)
			require.NoError(t, err)
			require.False(t, called)
			require.True(t, m.inWarmup)
		})
	})
}

func TestCPUProfiler(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		dir  string
		prof *cpuProfiler
		logs *strings.Builder
	}
	setup := func(t *testing.T, window time.Duration, h http.HandlerFunc) *testBundle {
		t.Helper()
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		dir := filepath.Join(t.TempDir(), "profiles") // created by newCPUProfiler
		var (
			mu   sync.Mutex
			logs strings.Builder
		)
		prof, err := newCPUProfiler(dir, strings.TrimPrefix(srv.URL, "http://"), window, func(f string, a ...any) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(&logs, f+"\n", a...)
		})
		require.NoError(t, err)
		return &testBundle{dir: dir, prof: prof, logs: &logs}
	}
	// profile runs one hooked window edge: start, then wait.
	profile := func(t *testing.T, b *testBundle, name string) {
		t.Helper()
		b.prof.hook(t.Context(), name)()()
	}

	t.Run("WritesTheProfileOfTheWindowLength", func(t *testing.T) {
		t.Parallel()
		query := make(chan string, 1)
		b := setup(t, 2500*time.Millisecond, func(w http.ResponseWriter, r *http.Request) {
			query <- r.URL.Path + "?" + r.URL.RawQuery
			_, _ = w.Write([]byte{0x1f, 0x8b, 8, 0})
		})
		profile(t, b, "push_b100")
		require.Equal(t, "/debug/pprof/profile?seconds=3", <-query, "rounded up to whole seconds")
		path := filepath.Join(b.dir, "push_b100.pprof")
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, []byte{0x1f, 0x8b, 8, 0}, data)
		require.Contains(t, b.logs.String(), "CPU profile of push_b100 written to "+path)
	})
	t.Run("AtLeastOneSecond", func(t *testing.T) {
		t.Parallel()
		seconds := make(chan string, 1)
		b := setup(t, 300*time.Millisecond, func(w http.ResponseWriter, r *http.Request) {
			seconds <- r.URL.Query().Get("seconds")
			_, _ = w.Write([]byte{0x1f, 0x8b})
		})
		profile(t, b, "popack_b1")
		require.Equal(t, "1", <-seconds)
	})
	t.Run("FailureIsAWarning", func(t *testing.T) {
		t.Parallel()
		b := setup(t, time.Second, func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "cpu profiling already in use", http.StatusInternalServerError)
		})
		profile(t, b, "push_b1")
		require.Contains(t, b.logs.String(), "warning: CPU profile of push_b1: 500 Internal Server Error")
		require.NoFileExists(t, filepath.Join(b.dir, "push_b1.pprof"))
	})
	t.Run("NilProfilerHooksNothing", func(t *testing.T) {
		t.Parallel()
		var p *cpuProfiler
		require.Nil(t, p.hook(t.Context(), "push_b1"))
	})
}
