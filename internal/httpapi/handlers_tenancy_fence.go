package httpapi

import (
	"context"
	"hash/maphash"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/queue"
)

// msgTenantMoving is the message of the 503 api.ErrorCodeTenantMoving.
const msgTenantMoving = "tenant is being moved"

// msgFencesUnread is the message of the 503 a tenant request gets before the broker
// has read the fence table once.
const msgFencesUnread = "the broker is starting: the tenant fences are not read yet"

// Fence timings: how long setting a fence waits for the tenant's requests in flight,
// how often the fence table is re-read, and how long one read may take.
const (
	fenceDrainTimeout  = 5 * time.Second
	fenceDrainPoll     = 5 * time.Millisecond
	fenceRefreshPeriod = time.Second
	fenceRefreshLimit  = 2 * time.Second
)

// fenceShards spreads the per-tenant in-flight counts over this many locks.
const fenceShards = 32

// tenantFences is what this broker knows of the fenced tenants (queen.tenant_fences)
// and counts of each tenant's requests in flight. The check on every tenant request
// is one atomic load and, with a fence anywhere, one map lookup: no query.
type tenantFences struct {
	set  atomic.Pointer[map[string]struct{}] // the fenced tenants; never mutated once stored
	seed maphash.Seed
	// loaded is set once the fence table has been read into set: until then no tenant
	// request is served, as a fenced one might be among them.
	loaded atomic.Bool

	// mu serializes writers of set; gen counts their changes, so that a refresh whose
	// read began before a change does not overwrite it.
	mu  sync.Mutex
	gen uint64

	shards [fenceShards]fenceShard
}

// fenceShard holds the in-flight counts and parked pops of the tenants hashed to it.
type fenceShard struct {
	mu    sync.Mutex
	n     map[string]int
	polls map[string]map[*parkedPoll]struct{}
}

// parkedPoll is one tenant pop in flight, whose waiting a fence ends (its stop
// closed): a pop parked answers empty at once, a claim in progress is finished and
// answered, and the fence's drain waits for it.
type parkedPoll struct {
	stop chan struct{}
	once sync.Once
}

// end closes the pop's stop signal (once, however many fences reach it).
func (p *parkedPoll) end() { p.once.Do(func() { close(p.stop) }) }

func newTenantFences() *tenantFences {
	f := &tenantFences{seed: maphash.MakeSeed()}
	f.set.Store(&map[string]struct{}{})
	for i := range f.shards {
		f.shards[i].n = make(map[string]int)
		f.shards[i].polls = make(map[string]map[*parkedPoll]struct{})
	}
	return f
}

func (f *tenantFences) shard(tenant string) *fenceShard {
	return &f.shards[maphash.String(f.seed, tenant)%fenceShards]
}

// fenced reports whether tenant is fenced.
func (f *tenantFences) fenced(tenant string) bool {
	set := *f.set.Load()
	if len(set) == 0 {
		return false
	}
	_, ok := set[tenant]
	return ok
}

// enter counts a request of tenant in flight unless the tenant is fenced. With poll
// set it also registers the request as a pop that a fence ends. The count comes
// before the check, and a fence is stored before its drain reads the counts, so a
// request either sees the fence or is waited for.
func (f *tenantFences) enter(tenant string, poll *parkedPoll) (ok bool) {
	sh := f.shard(tenant)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if f.fenced(tenant) {
		return false
	}
	sh.n[tenant]++
	if poll != nil {
		if sh.polls[tenant] == nil {
			sh.polls[tenant] = make(map[*parkedPoll]struct{})
		}
		sh.polls[tenant][poll] = struct{}{}
	}
	return true
}

// leave ends what enter began.
func (f *tenantFences) leave(tenant string, poll *parkedPoll) {
	sh := f.shard(tenant)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.n[tenant]--; sh.n[tenant] <= 0 {
		delete(sh.n, tenant)
	}
	if poll != nil {
		delete(sh.polls[tenant], poll)
		if len(sh.polls[tenant]) == 0 {
			delete(sh.polls, tenant)
		}
	}
}

// inFlight is the number of tenant's requests in flight.
func (f *tenantFences) inFlight(tenant string) int {
	sh := f.shard(tenant)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.n[tenant]
}

// endPolls ends the parked pops of tenant.
func (f *tenantFences) endPolls(tenant string) {
	sh := f.shard(tenant)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for p := range sh.polls[tenant] {
		p.end()
	}
}

// change fences or unfences tenant here at once, and ends its parked pops.
func (f *tenantFences) change(tenant string, fenced bool) {
	f.mu.Lock()
	next := make(map[string]struct{}, len(*f.set.Load())+1)
	for t := range *f.set.Load() {
		next[t] = struct{}{}
	}
	if fenced {
		next[tenant] = struct{}{}
	} else {
		delete(next, tenant)
	}
	f.set.Store(&next)
	f.gen++
	f.mu.Unlock()
	if fenced {
		f.endPolls(tenant)
	}
}

// replace makes the fenced set exactly tenants, read when the writers' generation
// was gen, and reports whether it did: it does nothing when a writer changed the set
// since. The newly fenced tenants' parked pops end.
func (f *tenantFences) replace(tenants []string, gen uint64) bool {
	f.mu.Lock()
	if f.gen != gen {
		f.mu.Unlock()
		return false
	}
	old := *f.set.Load()
	next := make(map[string]struct{}, len(tenants))
	var added []string
	for _, t := range tenants {
		next[t] = struct{}{}
		if _, ok := old[t]; !ok {
			added = append(added, t)
		}
	}
	f.set.Store(&next)
	f.loaded.Store(true)
	f.mu.Unlock()
	for _, t := range added {
		f.endPolls(t)
	}
	return true
}

// generation is the writers' generation, read before a refresh queries the table.
func (f *tenantFences) generation() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen
}

// drain waits up to fenceDrainTimeout for tenant's requests in flight to end and
// reports whether they did.
func (f *tenantFences) drain(ctx context.Context, tenant string) bool {
	deadline := time.NewTimer(fenceDrainTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(fenceDrainPoll)
	defer tick.Stop()
	for f.inFlight(tenant) > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return f.inFlight(tenant) == 0
		case <-tick.C:
		}
	}
	return true
}

// RefreshFences reads queen.tenant_fences into this broker's fenced tenants. It does
// nothing without a broker (no database). A read that a fence set or lifted here meanwhile
// made stale is dropped: the next one applies.
func (s *Server) RefreshFences(ctx context.Context) error {
	if s.broker == nil {
		return nil
	}
	gen := s.fences.generation()
	ctx, cancel := context.WithTimeout(ctx, fenceRefreshLimit)
	defer cancel()
	tenants, err := s.broker.TenantFenceList(ctx)
	if err != nil {
		return err
	}
	s.fences.replace(tenants, gen)
	return nil
}

// LoadFences reads the fence table before the broker serves tenants: until a read
// has succeeded every tenant request answers 503 unavailable (Retry-After: 1), and is
// neither run nor spooled. It retries every second while the read fails, and fails
// only when ctx ends.
func (s *Server) LoadFences(ctx context.Context) error {
	for {
		err := s.RefreshFences(ctx)
		if err == nil && (s.fences.loaded.Load() || s.broker == nil) {
			return nil
		}
		if err == nil {
			continue // a fence changed during the read: read again
		}
		s.logger.LogAttrs(ctx, slog.LevelWarn, "read the tenant fences", slog.Any("err", err))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(fenceRefreshPeriod):
		}
	}
}

// RunFences re-reads the fence table every second until ctx ends, so a fence set
// through another broker on the database applies here within about a second. A
// failed read keeps the fences last read and is logged.
func (s *Server) RunFences(ctx context.Context) {
	tick := time.NewTicker(fenceRefreshPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := s.RefreshFences(ctx); err != nil && ctx.Err() == nil {
			s.logger.LogAttrs(ctx, slog.LevelWarn, "re-read the tenant fences", slog.Any("err", err))
		}
	}
}

// fenceGuard runs a tenant request of a scoped route: 503 unavailable before the
// fences are read (with a broker), 503 tenant_moving when the tenant is fenced,
// else the request counted in flight; a pop (popRoutes) waiting for messages is ended
// by a fence with its ordinary empty answer (204), and one claiming is answered with
// what it claimed.
func (s *Server) fenceGuard(w http.ResponseWriter, r *http.Request, tenant, pattern string, next http.Handler) {
	if s.broker != nil && !s.fences.loaded.Load() {
		s.writeError(w, r, &queue.UnavailableError{Message: msgFencesUnread})
		return
	}
	var poll *parkedPoll
	if popRoutes[r.Method+" "+pattern] {
		poll = &parkedPoll{stop: make(chan struct{})}
		r = r.WithContext(broker.WithParkStop(r.Context(), poll.stop))
	}
	if !s.fences.enter(tenant, poll) {
		// The cause is a deliberate refusal, logged at Debug like push maintenance's.
		s.writeError(w, r, &httpError{status: http.StatusServiceUnavailable, code: api.ErrorCodeTenantMoving,
			msg: msgTenantMoving, err: &queue.UnavailableError{Message: msgTenantMoving}})
		return
	}
	defer s.fences.leave(tenant, poll)
	next.ServeHTTP(w, r)
}

// popRoutes are the routes whose requests may park (long-poll) and that a fence ends.
var popRoutes = map[string]bool{
	"GET /api/v1/pop":                                     true,
	"GET /api/v1/pop/queue/{queue}":                       true,
	"GET /api/v1/pop/queue/{queue}/partition/{partition}": true,
}

// handleTenancyFence is POST /internal/api/tenancy/fence {"tenant","fenced"}: sets or
// lifts the tenant's fence in the database and here at once (other brokers read it
// within a second); a fence waits up to 5 s for this broker's requests of the
// tenant in flight, its parked pops ended at once, and says whether they ended.
func (s *Server) handleTenancyFence(w http.ResponseWriter, r *http.Request) error {
	ts, o, tenant, err := s.moveRequest(r, "tenant", "fenced")
	if err != nil {
		return err
	}
	fenced, p := o.boolean("fenced")
	if p != present {
		return invalidField("fenced", "fenced must be true or false")
	}
	if err := ts.TenantFenceSet(r.Context(), tenant, fenced); err != nil {
		return err
	}
	s.fences.change(tenant, fenced)
	drained := true
	if fenced {
		drained = s.fences.drain(r.Context(), tenant)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"tenant": tenant, "fenced": fenced, "drained": drained})
}
