package cellsim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// Tenant is one tenant of the simulation.
type Tenant struct {
	// ID is the tenant id.
	ID string
	// Cell is where the proxy placed it, and after a move where it lives.
	Cell string
	// Key is its API key (scope write).
	Key string
	// api talks to the proxy's public port with Key.
	api *client.Client
}

func tenantID(i int) string { return fmt.Sprintf("t%04d", i) }

// createTenants creates n tenants through the admin API, without a cell so that the
// placement policy picks one, each with a key, and configures each tenant's load
// queue through the proxy, 8 at a time.
func (s *sim) createTenants(ctx context.Context, n int) error {
	s.tenants = make([]*Tenant, n)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t, err := s.createTenant(ctx, tenantID(i))
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				s.tenants[i] = t
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return firstErr
}

func (s *sim) createTenant(ctx context.Context, id string) (*Tenant, error) {
	var tv api.ProxyTenant
	// No admission limits: the load and the latency probe measure routing, not the
	// limiter (the default limits answer the probe's back-to-back requests 429).
	unlimited := json.RawMessage(`{"requestsPerSecond":0,"messagesPerSecond":0,"maxConcurrent":0}`)
	if _, err := s.admin.call(ctx, http.MethodPost, "/admin/v1/tenants", "",
		api.ProxyTenantCreate{ID: id, Limits: unlimited}, &tv); err != nil {
		return nil, err
	}
	t := &Tenant{ID: id, Cell: tv.Cell}
	if t.Cell == "" {
		t.Cell = DefaultCell // no cell in the answer: the proxy has only the default one
	}
	var k keyView
	if _, err := s.admin.call(ctx, http.MethodPost, "/admin/v1/tenants/"+id+"/keys", "",
		api.ProxyKeyCreate{Name: "sim", Scope: "write"}, &k); err != nil {
		return nil, err
	}
	t.Key = k.Key
	t.api = client.New(s.proxy.URL, client.WithToken(k.Key), client.WithHTTPClient(s.hc))
	lease, retries := s.cfg.LeaseSeconds, 1000
	for _, q := range []string{loadQueue, probeQueue} {
		if _, err := t.api.Configure(ctx, api.ConfigureRequest{Queue: q,
			Options: &api.QueueOptions{LeaseTime: &lease, RetryLimit: &retries}}); err != nil {
			return nil, fmt.Errorf("configure %s of tenant %s: %w", q, id, err)
		}
	}
	return t, nil
}

// registerCells registers every cell but the default one (QUEEN_PROXY_UPSTREAMS)
// over the admin API, then waits (at most cellsUpWait) until the proxy reports every
// cell's broker up. It returns what it last saw when they are not all up by then:
// the load then shows whether the proxy routes to them.
func (s *sim) registerCells(ctx context.Context) (string, error) {
	for _, c := range s.cells[1:] {
		body := api.ProxyCellCreate{Name: c.Name, Upstreams: []string{c.Broker.URL}}
		if _, err := s.admin.call(ctx, http.MethodPost, "/admin/v1/cells", "/admin/v1/cells", body, nil); err != nil {
			return "", err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, cellsUpWait)
	defer cancel()
	var last string
	for {
		var got api.ProxyCellList
		if _, err := s.admin.call(ctx, http.MethodGet, "/admin/v1/cells", "/admin/v1/cells", nil, &got); err != nil {
			if ctx.Err() != nil {
				return last, nil
			}
			return "", err
		}
		up, states := 0, map[string]int{}
		for _, c := range got.Cells {
			ok := len(c.Upstreams) > 0
			for _, u := range c.Upstreams {
				ok = ok && u.State == "up"
				states[u.State]++
			}
			if ok {
				up++
			}
		}
		if up >= len(s.cells) {
			return "", nil
		}
		last = fmt.Sprintf("%d of %d cells reported up within %s (upstream states %v)", up, len(s.cells), cellsUpWait, states)
		if pause(ctx, 100) != nil {
			return last, nil
		}
	}
}

// cellsUpWait bounds the wait for the proxy's health checks to see every cell up.
const cellsUpWait = 15 * time.Second
