package daemon_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemon"
	"github.com/queenmq/queen/internal/daemontest"
)

// TestDashboardServing: WEBAPP_ROOT unset serves the dashboard built into the binary,
// a directory serves that directory, set but empty serves none; API paths keep their
// JSON 404 whatever is served, and with JWT on the app itself needs no token.
func TestDashboardServing(t *testing.T) {
	t.Parallel()

	t.Run("EmbeddedByDefault", func(t *testing.T) {
		t.Parallel()
		tb := startBroker(t)
		status, body := tb.raw(t, http.MethodGet, "/", "")
		require.Equal(t, http.StatusOK, status)
		require.Contains(t, string(body), `<meta name="queen-auth" content="none">`)
		status, body = tb.raw(t, http.MethodGet, "/queues/e2e.orders", "")
		require.Equal(t, http.StatusOK, status, "a deep link of the app gets index.html")
		require.Contains(t, string(body), `name="queen-auth"`)
		status, body = tb.raw(t, http.MethodGet, "/api/v1/nope", "")
		require.Equal(t, http.StatusNotFound, status)
		require.Equal(t, "no_such_route", string(errorBody(t, body).Code))
	})

	t.Run("JWTModeServesTheAppWithoutAToken", func(t *testing.T) {
		t.Parallel()
		tb := serve(t, daemontest.Options{Env: []string{"JWT_ENABLED=true", "JWT_ALGORITHM=HS256",
			"JWT_SECRET=" + strings.Repeat("s", 32)}})
		status, body := tb.raw(t, http.MethodGet, "/", "")
		require.Equal(t, http.StatusOK, status)
		require.Contains(t, string(body), `<meta name="queen-auth" content="jwt">`)
		status, _ = tb.raw(t, http.MethodGet, "/api/v1/resources/queues", "")
		require.Equal(t, http.StatusUnauthorized, status, "the API still needs its token")
	})

	t.Run("SetButEmptyTurnsItOff", func(t *testing.T) {
		t.Parallel()
		tb := startBroker(t, "WEBAPP_ROOT=")
		status, body := tb.raw(t, http.MethodGet, "/", "")
		require.Equal(t, http.StatusNotFound, status)
		require.Equal(t, "not_found", string(errorBody(t, body).Code))
	})

	t.Run("ADirectoryIsServedInstead", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "index.html"),
			[]byte(`<!doctype html><title>own build</title>`), 0o644))
		tb := startBroker(t, "WEBAPP_ROOT="+dir)
		status, body := tb.raw(t, http.MethodGet, "/", "")
		require.Equal(t, http.StatusOK, status)
		require.Contains(t, string(body), "own build")
	})

	t.Run("AnUnreadableDirectoryStopsTheStart", func(t *testing.T) {
		t.Parallel()
		err := daemontest.StartError(t, daemontest.Options{
			Env: []string{"WEBAPP_ROOT=" + filepath.Join(t.TempDir(), "missing")}})
		require.ErrorIs(t, err, daemon.ErrUnsupportedConfig)
		require.ErrorContains(t, err, "WEBAPP_ROOT")
	})
}
