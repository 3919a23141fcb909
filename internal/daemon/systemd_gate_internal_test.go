package daemon

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/testclock"
)

// TestStartGate: /health passes a closed gate; other requests wait for Open, or get
// 503 unavailable when the start-up is abandoned or after startHold.
func TestStartGate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		serve := func(h http.Handler, path string) (<-chan int, *httptest.ResponseRecorder) {
			done := make(chan int, 1)
			w := httptest.NewRecorder()
			go func() {
				h.ServeHTTP(w, &http.Request{Method: http.MethodGet, URL: &url.URL{Path: path}})
				done <- w.Code
			}()
			return done, w
		}
		requireHeld := func(done <-chan int, msg string) {
			t.Helper()
			synctest.Wait() // the request has gone as far as it can
			select {
			case s := <-done:
				t.Fatalf("%s: served (%d) while the gate is closed", msg, s)
			default:
			}
		}

		g := newStartGate()
		h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
		}))
		live, _ := serve(h, "/health/live")
		require.Equal(t, http.StatusNoContent, <-live, "health routes are never held")
		first, _ := serve(h, "/api/v1/push")
		requireHeld(first, "before Open")
		g.Open()
		require.Equal(t, http.StatusNoContent, <-first)
		g.Abort() // an open gate stays open
		after, _ := serve(h, "/api/v1/push")
		require.Equal(t, http.StatusNoContent, <-after)

		g2 := newStartGate()
		aborted, _ := serve(g2.Wrap(http.NotFoundHandler()), "/api/v1/pop/queue/q")
		requireHeld(aborted, "before Abort")
		g2.Abort()
		require.Equal(t, http.StatusServiceUnavailable, <-aborted)

		g3 := newStartGate()
		late, w := serve(g3.Wrap(http.NotFoundHandler()), "/api/v1/pop/queue/q")
		testclock.AdvanceBubble(startHold - time.Millisecond)
		requireHeld(late, "just before startHold")
		testclock.AdvanceBubble(time.Millisecond)
		require.Equal(t, http.StatusServiceUnavailable, <-late, "held no longer than startHold")
		require.Equal(t, "5", w.Header().Get("Retry-After"))
	})
}
