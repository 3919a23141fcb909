package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/gateway"
)

// TestReadyBoundsTheDatabaseCheck: a proxy database that never answers (frozen) makes
// /health/ready answer 503, database unavailable, within a few seconds, instead of
// leaving the load balancer's check waiting.
func TestReadyBoundsTheDatabaseCheck(t *testing.T) {
	t.Parallel()
	g := gateway.New(gateway.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Registry: prometheus.NewRegistry(), Now: time.Now,
		DatabaseReady: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }})

	answered := make(chan *httptest.ResponseRecorder, 1)
	start := time.Now()
	go func() {
		w := httptest.NewRecorder()
		g.Handler().ServeHTTP(w, httptest.NewRequestWithContext(context.WithoutCancel(t.Context()),
			http.MethodGet, "/health/ready", nil))
		answered <- w
	}()
	select {
	case w := <-answered:
		t.Logf("answered after %s", time.Since(start).Round(time.Millisecond))
		require.Equal(t, http.StatusServiceUnavailable, w.Code)
		var body map[string]string
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
		require.Equal(t, "unavailable", body["database"])
		require.Equal(t, "not ready", body["status"])
	case <-time.After(10 * time.Second):
		t.Fatal("/health/ready waited for a database that never answers")
	}
}
