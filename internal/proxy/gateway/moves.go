package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/queenmq/queen/internal/api"
)

// Move phases as the gateway reads them (the proxy database's tenant_moves.phase).
const (
	phasePausing  = "pausing"
	phaseFinal    = "final"
	phaseSwitched = "switched"
	phaseCleaning = "cleaning"
)

// holdMax bounds how long a request of a tenant being moved is held: the move gives
// up its pause well before (docs/multi-tenant.md, "Moving a tenant").
const holdMax = 30 * time.Second

// retryAfterMoving is the Retry-After of a request held past holdMax.
const retryAfterMoving = time.Second

// MoveState is a live move as the gateway routes by it.
type MoveState struct {
	Tenant, From, To, Phase string
}

// moveTable is the live moves, by tenant. changed is closed and replaced at every
// update, so that held requests wake up and look again.
type moveTable struct {
	mu       sync.RWMutex
	byTenant map[string]MoveState
	changed  chan struct{}
	// reload asks the daemon's loop to read the moves now (a broker said a tenant
	// is fenced).
	reload chan struct{}
}

func newMoveTable() *moveTable {
	return &moveTable{byTenant: map[string]MoveState{}, changed: make(chan struct{}), reload: make(chan struct{}, 1)}
}

func (m *moveTable) set(list []MoveState) {
	next := make(map[string]MoveState, len(list))
	for _, mv := range list {
		next[mv.Tenant] = mv
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byTenant = next
	close(m.changed)
	m.changed = make(chan struct{})
}

// cellOf is the tenant's cell: the target of its move once it switched, else cell.
func (m *moveTable) cellOf(tenantID, cell string) string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if mv, ok := m.byTenant[tenantID]; ok && (mv.Phase == phaseSwitched || mv.Phase == phaseCleaning) {
		return mv.To
	}
	return cell
}

// current is the cell that holds the tenant's truth while it moves: the source
// until the switch, the target after. ok is false when the tenant is not moving.
func (m *moveTable) current(tenantID string) (string, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mv, ok := m.byTenant[tenantID]
	if !ok {
		return "", false
	}
	if mv.Phase == phaseSwitched || mv.Phase == phaseCleaning {
		return mv.To, true
	}
	return mv.From, true
}

// held reports whether the tenant's requests wait now, and the channel closed at
// the next change.
func (m *moveTable) held(tenantID string) (bool, <-chan struct{}) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mv, ok := m.byTenant[tenantID]
	return ok && (mv.Phase == phasePausing || mv.Phase == phaseFinal), m.changed
}

// moving reports whether the tenant has a live move.
func (m *moveTable) moving(tenantID string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.byTenant[tenantID]
	return ok
}

// byPhase counts the live moves by phase.
func (m *moveTable) byPhase() map[string]int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := map[string]int{}
	for _, mv := range m.byTenant {
		out[mv.Phase]++
	}
	return out
}

// next returns the channel closed at the next change.
func (m *moveTable) next() <-chan struct{} {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.changed
}

// SetMoves replaces the live moves the gateway routes by.
func (s *Server) SetMoves(list []MoveState) { s.moves.set(list) }

// ReloadMoves is closed-over by the daemon's loop: a value arrives when the gateway
// wants the moves read again at once.
func (s *Server) ReloadMoves() <-chan struct{} { return s.moves.reload }

func (s *Server) askReload() {
	select {
	case s.moves.reload <- struct{}{}:
	default:
	}
}

// holdWhileMoving waits while the tenant's move holds its requests, until deadline.
// It returns a 503 tenant_moving when the deadline passes first.
func (s *Server) holdWhileMoving(ctx context.Context, tenantID string, deadline time.Time) error {
	counted := false
	defer func() {
		if counted {
			s.metrics.held.Dec()
		}
	}()
	for {
		held, changed := s.moves.held(tenantID)
		if !held {
			return nil
		}
		if !counted {
			counted = true
			s.metrics.held.Inc()
		}
		if err := s.waitChange(ctx, changed, deadline); err != nil {
			return err
		}
	}
}

// waitChange waits for changed, the deadline or the client.
func (s *Server) waitChange(ctx context.Context, changed <-chan struct{}, deadline time.Time) error {
	wait := time.Until(deadline)
	if wait <= 0 {
		return movingError()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-changed:
		return nil
	case <-t.C:
		return movingError()
	case <-ctx.Done():
		return ctx.Err()
	}
}

func movingError() *apiError {
	return &apiError{status: http.StatusServiceUnavailable, code: api.ErrorCodeTenantMoving,
		msg: "the tenant is being moved to another cell; retry", retryAfter: retryAfterMoving, result: "upstream_error"}
}

// fencedAnswer reports whether a broker's answer is its 503 for a fenced tenant (the
// request was not run). The answer's body is consumed when it is a 503.
func fencedAnswer(resp *http.Response) bool {
	if resp.StatusCode != http.StatusServiceUnavailable {
		return false
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	var e api.ErrorBody
	return json.Unmarshal(raw, &e) == nil && e.Code == api.ErrorCodeTenantMoving
}
