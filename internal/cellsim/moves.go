package cellsim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/queenmq/queen/internal/api"
)

// MoveResult is one move as the simulation saw it.
type MoveResult struct {
	Tenant, From, To string
	// Phase is the move's last phase: done, or failed with Error.
	Phase, Error string
	// Duration is from the POST until the move was seen finished.
	Duration time.Duration
	// PauseMs is the move's pauseMs: how long the tenant was held.
	PauseMs float64
}

// moveRoute is the move route, for a RouteMissingError.
const moveRoute = "/admin/v1/tenants/{id}/move"

// runMoves moves cfg.Moves distinct tenants, each to a cell other than its own,
// MoveParallel at a time, and waits for each. It stops starting moves at the first
// RouteMissingError, which it returns with what ran.
func (s *sim) runMoves(ctx context.Context) ([]MoveResult, error) {
	rng := rand.New(rand.NewPCG(33, 6))
	order := rng.Perm(len(s.tenants))
	if s.cfg.Moves < len(order) {
		order = order[:s.cfg.Moves]
	}
	var (
		mu      sync.Mutex
		results []MoveResult
		missing error
		wg      sync.WaitGroup
	)
	slots := make(chan struct{}, max(s.cfg.MoveParallel, 1))
	for n, i := range order {
		t := s.tenants[i]
		to := s.cells[(s.cellIndex(t.Cell)+1+n%(len(s.cells)-1))%len(s.cells)].Name
		slots <- struct{}{}
		mu.Lock()
		stop := missing != nil
		mu.Unlock()
		if stop || ctx.Err() != nil {
			<-slots
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			r, err := s.move(ctx, t, to)
			mu.Lock()
			defer mu.Unlock()
			if isMissing(err) {
				if missing == nil {
					missing = err
				}
				return
			}
			if err != nil {
				r.Phase, r.Error = "error", err.Error()
			}
			results = append(results, r)
		}()
	}
	wg.Wait()
	return results, missing
}

func (s *sim) cellIndex(name string) int {
	for i, c := range s.cells {
		if c.Name == name {
			return i
		}
	}
	return 0
}

// move starts the move of t to cell to and polls it until it is finished.
func (s *sim) move(ctx context.Context, t *Tenant, to string) (MoveResult, error) {
	r := MoveResult{Tenant: t.ID, From: t.Cell, To: to}
	start := time.Now()
	var mv api.ProxyMove
	if _, err := s.admin.call(ctx, http.MethodPost, "/admin/v1/tenants/"+t.ID+"/move", moveRoute,
		api.ProxyMoveCreate{Cell: to}, &mv); err != nil {
		return r, err
	}
	deadline := start.Add(s.cfg.MoveTimeout)
	for mv.FinishedAt == nil && mv.Phase != "done" && mv.Phase != "failed" {
		if time.Now().After(deadline) {
			return r, fmt.Errorf("move %d of %s not finished within %s (phase %s)", mv.ID, t.ID, s.cfg.MoveTimeout, mv.Phase)
		}
		if err := pause(ctx, 100); err != nil {
			return r, err
		}
		path := "/admin/v1/moves/" + strconv.FormatInt(mv.ID, 10)
		if _, err := s.admin.call(ctx, http.MethodGet, path, "/admin/v1/moves/{id}", nil, &mv); err != nil {
			return r, err
		}
	}
	r.Duration = time.Since(start)
	r.Phase = mv.Phase
	if mv.Error != nil {
		r.Error = *mv.Error
	}
	if mv.PauseMs != nil {
		r.PauseMs = *mv.PauseMs
	}
	if r.Phase == "done" {
		t.Cell = to
	}
	return r, nil
}
