package daemon

import (
	"net/http"
	"strings"
	"sync"
	"time"
)

// startGate holds API requests that arrive before the broker is ready. Under socket
// activation the very request that starts queen is accepted at once, while PostgreSQL
// is still being reached and the schema applied; without the gate it would run
// against a database without the schema. Held requests proceed as soon as the gate
// opens, or get 503 after startHold (or at once if the start is abandoned). /health
// routes always pass: they report the start-up themselves.
type startGate struct {
	opened  chan struct{}
	aborted chan struct{}
	open    sync.Once
	abort   sync.Once
}

// startHold is how long a request waits for the start-up before a 503.
const startHold = 10 * time.Second

func newStartGate() *startGate {
	return &startGate{opened: make(chan struct{}), aborted: make(chan struct{})}
}

// Open lets every held and future request through.
func (g *startGate) Open() { g.open.Do(func() { close(g.opened) }) }

// Abort answers held and future requests 503 (the start-up failed or was cancelled);
// an open gate stays open.
func (g *startGate) Abort() { g.abort.Do(func() { close(g.aborted) }) }

// Wrap puts the gate in front of h.
func (g *startGate) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/health") {
			select {
			case <-g.opened:
			default:
				if !g.hold(w, r) {
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// hold waits for the gate; it reports whether to serve the request, having answered
// it otherwise.
func (g *startGate) hold(w http.ResponseWriter, r *http.Request) bool {
	t := time.NewTimer(startHold)
	defer t.Stop()
	select {
	case <-g.opened:
		return true
	case <-r.Context().Done():
		return false
	case <-g.aborted:
	case <-t.C:
	}
	select {
	case <-g.opened: // opened while aborting or timing out
		return true
	default:
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "5")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(`{"success":false,"error":"the broker is starting: waiting for PostgreSQL and the schema","code":"unavailable"}` + "\n"))
	return false
}
