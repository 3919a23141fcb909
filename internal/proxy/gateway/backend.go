package gateway

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queenmq/queen/internal/api"
)

// upState is a broker's health as the proxy sees it.
type upState int

const (
	stateUnknown upState = iota
	stateUp
	stateDown
	// stateMisconfigured answers but has tenancy off or another header: no tenant
	// traffic.
	stateMisconfigured
)

func (s upState) String() string {
	return [...]string{"unknown", "up", "down", "misconfigured"}[s]
}

// checkTimeout bounds one health or tenancy probe.
const checkTimeout = time.Second

// Backend is one broker.
type Backend struct {
	// URL is the broker's base URL.
	URL      *url.URL
	inflight atomic.Int64

	mu     sync.Mutex
	state  upState
	streak int // consecutive probe results that disagree with state
}

// State is the backend's current state: unknown, up, down or misconfigured.
func (u *Backend) State() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.state.String()
}

func (u *Backend) up() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.state == stateUp
}

// Pool is the set of brokers and their health checks.
type Pool struct {
	backends []*Backend
	// client makes the health and tenancy probes; it does not check connections
	// (a broker with tenancy off answers its probes, and is misconfigured).
	client   *http.Client
	header   string
	interval time.Duration
	logger   *slog.Logger
	// authorize sets the proxy's own credential on a request of its own.
	authorize func(*http.Request) error
	upGauge   *prometheus.GaugeVec
}

// Backends lists the brokers.
func (p *Pool) Backends() []*Backend { return p.backends }

// pick returns the less busy of two random healthy brokers other than not, or nil.
func (p *Pool) pick(not *Backend) *Backend {
	var healthy []*Backend
	for _, u := range p.backends {
		if u != not && u.up() {
			healthy = append(healthy, u)
		}
	}
	switch len(healthy) {
	case 0:
		return nil
	case 1:
		return healthy[0]
	}
	i := rand.IntN(len(healthy))
	j := rand.IntN(len(healthy) - 1)
	if j >= i {
		j++
	}
	a, b := healthy[i], healthy[j]
	if b.inflight.Load() < a.inflight.Load() {
		return b
	}
	return a
}

// Run probes every broker at once and then every interval until ctx is done.
func (p *Pool) Run(ctx context.Context) {
	tick := time.NewTicker(p.interval)
	defer tick.Stop()
	for {
		var wg sync.WaitGroup
		for _, u := range p.backends {
			wg.Go(func() { p.check(ctx, u) })
		}
		wg.Wait()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// check probes the broker (probeState) and applies the two-in-a-row rule: two
// failures make a broker down, two successes up. The first result decides from the
// unknown state, and a change between up and misconfigured (a fresh tenancy answer
// of a broker that answers) applies at once.
func (p *Pool) check(ctx context.Context, u *Backend) {
	want, info := p.probeState(ctx, u)
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case want == u.state:
		u.streak = 0
	case u.state == stateUnknown || (want != stateDown && u.state != stateDown):
		p.setState(u, want, info)
	default:
		u.streak++
		if u.streak >= 2 {
			p.setState(u, want, info)
		}
	}
}

// probeState asks the broker for its health and then, at every check, for its
// tenancy: its tenancy changes only with a restart, which may fall between two
// checks, so no answer of an earlier check is trusted. A failed health or tenancy
// probe (an error, a timeout, a status other than 200: a broker whose JWKS is not
// loaded yet answers 503) is down; only a tenancy answered 200 with tenancy off or
// another header is misconfigured.
func (p *Pool) probeState(ctx context.Context, u *Backend) (upState, api.Tenancy) {
	var info api.Tenancy
	if p.probe(ctx, u, "/health/ready", nil, checkTimeout) != nil {
		return stateDown, info
	}
	if p.probe(ctx, u, tenancyPath, &info, checkTimeout) != nil {
		return stateDown, info
	}
	if !tenancyMatches(info, p.header) {
		return stateMisconfigured, info
	}
	return stateUp, info
}

// misconfigured marks u misconfigured at once: a new connection to it found its
// tenancy off or another header (info). Its next checks take it back up once it
// scopes by the proxy's header.
func (p *Pool) misconfigured(u *Backend, info api.Tenancy) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.state != stateMisconfigured {
		p.setState(u, stateMisconfigured, info)
	}
}

// setState moves u to s; caller holds u.mu. A move to misconfigured is a warning
// that says why (info is the broker's tenancy answer).
func (p *Pool) setState(u *Backend, s upState, info api.Tenancy) {
	if u.state != s {
		p.logger.Info("backend state", "upstream", u.URL.String(), "from", u.state.String(), "to", s.String())
		if s == stateMisconfigured {
			p.logger.Warn("backend has tenancy off or another header: no tenant traffic goes to it",
				"upstream", u.URL.String(), "enabled", info.Enabled, "header", info.Header, "want", p.header)
		}
	}
	u.state, u.streak = s, 0
	v := map[upState]float64{stateUp: 1, stateMisconfigured: 2}[s]
	p.upGauge.WithLabelValues(u.URL.String()).Set(v)
}

// tenancyPath is the broker route that says whether and how it scopes by tenant.
const tenancyPath = "/internal/api/tenancy"

// tenancyMatches reports whether a broker's tenancy answer is scoping by header.
func tenancyMatches(info api.Tenancy, header string) bool {
	return info.Enabled && strings.EqualFold(info.Header, header)
}

// probe GETs path with the proxy's credential and decodes a 200 answer into out.
func (p *Pool) probe(ctx context.Context, u *Backend, path string, out any, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.URL.String()+path, nil)
	if err != nil {
		return err
	}
	if err := p.authorize(req); err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return &statusError{status: resp.StatusCode}
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(out)
}

// statusError is an unexpected status from a broker.
type statusError struct{ status int }

func (e *statusError) Error() string { return "broker answered " + http.StatusText(e.status) }

// Get GETs path from a healthy broker with the proxy's own credential and decodes the
// 200 answer into out.
func (p *Pool) Get(ctx context.Context, path string, out any) error {
	u := p.pick(nil)
	if u == nil {
		return noBackend()
	}
	return p.probe(ctx, u, path, out, snapshotTimeout)
}

// snapshotTimeout bounds a GET of the proxy's own (the usage snapshot).
const snapshotTimeout = 10 * time.Second

// noBackend is the answer when no broker is up.
func noBackend() *apiError {
	return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, msg: "no broker is available",
		retryAfter: time.Second, result: "upstream_error"}
}
