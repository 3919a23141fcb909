package cellsim

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// sim is one simulation's state.
type sim struct {
	cfg     Config
	cells   []*Cell
	proxy   *proxytest.Proxy
	admin   admin
	hc      *http.Client
	tenants []*Tenant
	history *History

	mu   sync.Mutex
	errs []error // failures seen off the test goroutine
}

// fail records a failure seen by a load goroutine; Run returns them.
func (s *sim) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) < 10 {
		s.errs = append(s.errs, err)
	}
}

// Run runs the simulation cfg describes and returns its report. Starting the cells
// and the proxy fails the test (t.Fatal); a route the proxy does not serve returns a
// *RouteMissingError when cells cannot be registered, and sets MovesSkipped when
// moves cannot be started. Failures of the load itself are returned as an error along
// with the report; the counts of the report are for the caller to judge.
func Run(t testing.TB, cfg Config) (*Report, error) {
	t.Helper()
	began := time.Now()
	s := &sim{cfg: cfg, history: NewHistory()}
	transport := &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 128, IdleConnTimeout: time.Minute}
	s.hc = &http.Client{Transport: transport}
	t.Cleanup(transport.CloseIdleConnections)

	for i := range cfg.Cells {
		s.cells = append(s.cells, startCell(t, cfg, i))
	}
	s.proxy = proxytest.Start(t, proxytest.Options{Backends: []string{s.cells[0].Broker.URL}})
	s.admin = newAdmin(s.proxy, s.hc)
	ctx := t.Context()
	rep := &Report{Config: cfg, Setup: time.Since(began)}

	setupCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if len(s.cells) > 1 {
		note, err := s.registerCells(setupCtx)
		if err != nil {
			return rep, err
		}
		rep.Notes = append(rep.Notes, note)
	}
	if err := s.createTenants(setupCtx, cfg.Tenants); err != nil {
		return rep, err
	}
	rep.PlacedPerCell = map[string]int{}
	for _, tn := range s.tenants {
		rep.PlacedPerCell[tn.Cell]++
	}
	rep.Setup = time.Since(began)

	loadStart := time.Now()
	l := s.startLoad(ctx)
	if err := pause(ctx, int(cfg.Warmup/time.Millisecond)); err != nil {
		return rep, err
	}
	moved := map[string]bool{}
	if len(s.cells) < 2 {
		rep.MovesSkipped = "one cell: nowhere to move a tenant"
	} else {
		moves, err := s.runMoves(ctx)
		rep.Moves = moves
		if isMissing(err) {
			rep.MovesSkipped = err.Error()
		} else if err != nil {
			s.fail(err)
		}
	}
	for _, m := range rep.Moves {
		if m.Phase == "done" {
			moved[m.Tenant] = true
		}
	}
	if err := pause(ctx, int(cfg.Tail/time.Millisecond)); err != nil {
		return rep, err
	}
	l.stopPush()
	l.producers.Wait()
	rep.Load = time.Since(loadStart)

	drainStart := time.Now()
	for s.history.Outstanding(cfg.Groups) > 0 && time.Since(drainStart) < cfg.Drain && ctx.Err() == nil {
		_ = pause(ctx, 100)
	}
	l.stopPop()
	l.consumers.Wait()
	rep.Drain = time.Since(drainStart)
	rep.PushRetries, rep.PopErrors = l.pushRetries.Load(), l.popErrors.Load()
	rep.Counts, rep.LostExamples = s.history.Finish(cfg.Groups)

	// Where the proxy says each moved tenant lives now.
	for _, tn := range s.tenants {
		if !moved[tn.ID] {
			continue
		}
		var tv api.ProxyTenant
		if _, err := s.admin.call(ctx, http.MethodGet, "/admin/v1/tenants/"+tn.ID, "", nil, &tv); err != nil {
			s.fail(err)
		} else if tv.Cell != tn.Cell {
			s.fail(errors.New("cellsim: tenant " + tn.ID + " moved to " + tn.Cell + " but the proxy places it in " + tv.Cell))
			tn.Cell = tv.Cell
		}
	}

	probeTenant := s.tenants[0]
	for _, tn := range s.tenants {
		if !moved[tn.ID] {
			probeTenant = tn
			break
		}
	}
	o, err := s.probe(ctx, probeTenant)
	if err != nil {
		s.fail(err)
	}
	rep.Overhead = o

	p, err := s.checkPlacement(ctx, moved)
	if err != nil {
		s.fail(err)
	}
	rep.Placement = p
	rep.Wall = time.Since(began)

	s.mu.Lock()
	defer s.mu.Unlock()
	return rep, errors.Join(s.errs...)
}
