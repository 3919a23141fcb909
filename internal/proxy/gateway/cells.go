package gateway

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultCell is the cell a tenant without one lives in, and the cell
// QUEEN_PROXY_UPSTREAMS names.
const DefaultCell = "default"

// CellHeader is the request header an operator names a cell with (a request in
// global scope goes to one cell), and the answer header saying which cell answered.
const CellHeader = "X-Queen-Cell"

// CellSpec is a cell as the gateway routes to it: its name and its brokers.
type CellSpec struct {
	Name      string
	Upstreams []*url.URL
}

// cell is one cell's brokers and their health checks.
type cell struct {
	name   string
	pool   *Pool
	urls   []string
	cancel context.CancelFunc // stops the pool's checks; nil until started
}

// cells is every cell the gateway routes to, keyed by name. The daemon replaces the
// set from the proxy database; pools whose brokers did not change keep their state.
type cells struct {
	mu      sync.RWMutex
	byName  map[string]*cell
	runCtx  context.Context // set by Run: pools added later start under it
	newPool func(urls []*url.URL) *Pool
}

func urlStrings(us []*url.URL) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.String()
	}
	return out
}

// set makes the cells exactly specs. A cell whose brokers changed gets a new pool
// (its health is checked again from unknown).
func (c *cells) set(specs []CellSpec) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := map[string]bool{}
	for _, sp := range specs {
		keep[sp.Name] = true
		urls := urlStrings(sp.Upstreams)
		if old := c.byName[sp.Name]; old != nil && slices.Equal(old.urls, urls) {
			continue
		} else if old != nil && old.cancel != nil {
			old.cancel()
		}
		ce := &cell{name: sp.Name, pool: c.newPool(sp.Upstreams), urls: urls}
		c.byName[sp.Name] = ce
		c.start(ce)
	}
	for name, ce := range c.byName {
		if !keep[name] {
			if ce.cancel != nil {
				ce.cancel()
			}
			delete(c.byName, name)
		}
	}
}

// start runs the cell's health checks under the run context, once there is one.
func (c *cells) start(ce *cell) {
	if c.runCtx == nil || ce.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(c.runCtx)
	ce.cancel = cancel
	go ce.pool.Run(ctx)
}

// Run checks every cell's brokers until ctx is done.
func (c *cells) Run(ctx context.Context) {
	c.mu.Lock()
	c.runCtx = ctx
	for _, ce := range c.byName {
		c.start(ce)
	}
	c.mu.Unlock()
	<-ctx.Done()
}

func (c *cells) get(name string) *cell {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.byName[name]
}

// all returns the cells sorted by name.
func (c *cells) all() []*cell {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*cell, 0, len(c.byName))
	for _, ce := range c.byName {
		out = append(out, ce)
	}
	slices.SortFunc(out, func(a, b *cell) int { return strings.Compare(a.name, b.name) })
	return out
}

// SetCells replaces the cells the gateway routes to.
func (s *Server) SetCells(specs []CellSpec) { s.cells.set(specs) }

// RunCells checks the brokers of every cell, those added later included, until ctx
// is done.
func (s *Server) RunCells(ctx context.Context) { s.cells.Run(ctx) }

// CellBrokers returns a cell's brokers with their states, nil for an unknown cell.
func (s *Server) CellBrokers(name string) []*Backend {
	ce := s.cells.get(name)
	if ce == nil {
		return nil
	}
	return ce.pool.Backends()
}

// CellPick returns a healthy broker of the cell, nil when none is up.
func (s *Server) CellPick(name string) *Backend {
	ce := s.cells.get(name)
	if ce == nil {
		return nil
	}
	return ce.pool.pick(nil)
}

// Cells lists the cell names the gateway routes to, sorted.
func (s *Server) Cells() []string {
	var names []string
	for _, ce := range s.cells.all() {
		names = append(names, ce.name)
	}
	return names
}

// Transport is the gateway's connection pool to the brokers, for the proxy's own
// calls.
func (s *Server) Transport() http.RoundTripper { return s.transport }

// AuthorizeOwn sets the proxy's own credential (global scope, admin role) on req.
func (s *Server) AuthorizeOwn(req *http.Request) error { return s.authorizeOwn(req) }

// cellFor is the cell a request goes to: a tenant's (the target of its move once the
// move switched), or for an operator the cell named by CellHeader, else default, else
// the only cell. An unknown or unnamed cell is a 503 or a 400 naming the header.
func (s *Server) cellFor(r *http.Request, cred *principal) (*cell, error) {
	var name string
	switch {
	case cred != nil && cred.tenant != nil:
		name = s.moves.cellOf(cred.tenant.ID, cred.tenant.Cell)
		if name == "" {
			name = DefaultCell
		}
	case r.Header.Get(CellHeader) != "":
		name = r.Header.Get(CellHeader)
		if s.cells.get(name) == nil {
			return nil, errorf(http.StatusBadRequest, codeInvalidArgument, "no cell named "+name+" ("+CellHeader+")")
		}
	default:
		if s.cells.get(DefaultCell) != nil {
			name = DefaultCell
		} else if all := s.cells.all(); len(all) == 1 {
			name = all[0].name
		} else {
			return nil, errorf(http.StatusBadRequest, codeInvalidArgument,
				"this proxy has several cells and none is named default: name one with the "+CellHeader+" header")
		}
	}
	ce := s.cells.get(name)
	if ce == nil {
		return nil, &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
			msg: "the tenant's cell is not known to this proxy yet", retryAfter: retryAfterMoving, result: "upstream_error"}
	}
	return ce, nil
}

// cellCollector serves, at each scrape, every cell's healthy brokers and the live
// moves by phase, as this replica sees them.
type cellCollector struct {
	s            *Server
	brokersUp    *prometheus.Desc
	movesByPhase *prometheus.Desc
}

func newCellCollector(s *Server) *cellCollector {
	return &cellCollector{s: s,
		brokersUp: prometheus.NewDesc("queen_proxy_cell_brokers_up",
			"Brokers of the cell passing their health checks (0: the cell's tenants are answered 503).", []string{"cell"}, nil),
		movesByPhase: prometheus.NewDesc("queen_proxy_tenant_moves",
			"Live tenant moves by phase, as this replica last read them.", []string{"phase"}, nil)}
}

// Describe sends the two descriptions.
func (c *cellCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.brokersUp
	ch <- c.movesByPhase
}

// Collect sends each cell's healthy brokers and the live moves by phase.
func (c *cellCollector) Collect(ch chan<- prometheus.Metric) {
	for _, ce := range c.s.cells.all() {
		up := 0
		for _, b := range ce.pool.Backends() {
			if b.up() {
				up++
			}
		}
		ch <- prometheus.MustNewConstMetric(c.brokersUp, prometheus.GaugeValue, float64(up), ce.name)
	}
	for phase, n := range c.s.moves.byPhase() {
		ch <- prometheus.MustNewConstMetric(c.movesByPhase, prometheus.GaugeValue, float64(n), phase)
	}
}
