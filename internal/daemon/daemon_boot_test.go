package daemon_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/daemon"
)

// lockedBuffer is a goroutine-safe log sink.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestBootWaitsForPostgreSQL starts the daemon against a port where nothing listens:
// it serves /health/live, answers /health/ready with 503, logs each attempt, and stops
// cleanly when cancelled.
func TestBootWaitsForPostgreSQL(t *testing.T) {
	t.Parallel()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadPort := dead.Addr().(*net.TCPAddr).Port
	require.NoError(t, dead.Close())

	cfg, err := config.Load([]string{"PG_HOST=127.0.0.1", "PG_PORT=" + strconv.Itoa(deadPort), "LOG_LEVEL=info",
		"FILE_BUFFER_DIR=" + t.TempDir()})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + ln.Addr().String()

	var logs lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- daemon.Run(ctx, cfg, daemon.Options{Stdout: &logs, Listener: ln}) }()

	status := func(path string) int {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Eventually(t, func() bool { return status("/health/live") == http.StatusOK }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, http.StatusServiceUnavailable, status("/health/ready"))
	require.Equal(t, http.StatusServiceUnavailable, status("/health"))
	require.Eventually(t, func() bool {
		return bytes.Count([]byte(logs.String()), []byte("waiting for PostgreSQL")) >= 2
	}, 15*time.Second, 50*time.Millisecond, "one log line per attempt")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("daemon did not stop while waiting for PostgreSQL")
	}
}
