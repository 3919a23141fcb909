package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// computedAt is when the broker computed a usage snapshot; zero before its first run
// (computedAt null).
func computedAt(u *api.TenancyUsage) (time.Time, error) {
	if u.ComputedAt == nil {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339, *u.ComputedAt)
}

// stored is what a tenant stores: the snapshot's numbers plus what this replica
// admitted since.
type stored struct {
	messages, bytes int64
	queues          map[string]bool
}

// quotas checks pushes and configures against the tenants' quotas.
type quotas struct {
	failClosed bool
	refresh    time.Duration
	now        func() time.Time

	mu sync.Mutex
	// snapshotAt is when the last snapshot was fetched (zero: never).
	snapshotAt time.Time
	snapshot   map[string]*stored
	// epochs hold what this replica admitted, one per interval between two snapshot
	// fetches, oldest first; the last one takes new admissions. A snapshot counts
	// what was stored when the broker computed it (computedAt), which can be well
	// before its fetch: the epochs that may have ended after that stay counted.
	epochs []epoch
}

// epoch is what the replica admitted from start until the next snapshot's fetch.
type epoch struct {
	start    time.Time
	byTenant map[string]*stored
}

// snapshotSkew is how far the broker's clock (a snapshot's computedAt) may be
// ahead of the proxy's (both are meant to be NTP-synchronised): an epoch is dropped
// only once it ended this long before the snapshot was computed. Counting an
// admission twice for a moment refuses early; dropping it before a snapshot counts it
// would admit past the quota until the next one.
const snapshotSkew = time.Second

func newQuotas(refresh time.Duration, failClosed bool, now func() time.Time) *quotas {
	return &quotas{refresh: refresh, failClosed: failClosed, now: now,
		snapshot: map[string]*stored{}, epochs: []epoch{{start: now(), byTenant: map[string]*stored{}}}}
}

// counted returns what the tenant stores as the proxy counts it: the snapshot's
// numbers plus every epoch's. The caller holds mu.
func (qs *quotas) counted(tenantID string) (messages, bytes int64, queues map[string]bool) {
	queues = map[string]bool{}
	add := func(s *stored) {
		if s == nil {
			return
		}
		messages += s.messages
		bytes += s.bytes
		for n := range s.queues {
			queues[n] = true
		}
	}
	add(qs.snapshot[tenantID])
	for _, e := range qs.epochs {
		add(e.byTenant[tenantID])
	}
	return messages, bytes, queues
}

// demand is what one request would add to a tenant's storage.
type demand struct {
	messages, bytes int64
	queues          []string
}

// admit checks d against q for the tenant and, when it fits, counts it as admitted.
// A snapshot older than five refresh intervals fails open (with a warning by the
// caller) unless fail-closed is set.
func (qs *quotas) admit(tenantID string, q tenant.Quotas, d demand) (*apiError, bool) {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	stale := qs.now().Sub(qs.snapshotAt) > 5*qs.refresh
	if stale && !qs.failClosed {
		qs.add(tenantID, d)
		return nil, true
	}
	if stale {
		return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
			msg: "storage usage is unknown; quotas fail closed", retryAfter: qs.refresh, result: "quota_exceeded"}, false
	}
	msgs, bytes, queues := qs.counted(tenantID)
	newQueues := 0
	for _, n := range d.queues {
		if !queues[n] {
			queues[n] = true
			newQueues++
		}
	}
	refuse := func(limit, msg string) (*apiError, bool) {
		return &apiError{status: http.StatusTooManyRequests, code: codeQuotaExceeded, msg: msg, limit: limit,
			retryAfter: qs.refresh, result: "quota_exceeded"}, false
	}
	switch {
	case q.MaxMessages > 0 && d.messages > 0 && msgs+d.messages > q.MaxMessages:
		return refuse("messages", "quota exceeded: stored messages")
	case q.MaxBytes > 0 && d.bytes > 0 && bytes+d.bytes > q.MaxBytes:
		return refuse("bytes", "quota exceeded: stored bytes")
	case q.MaxQueues > 0 && newQueues > 0 && int64(len(queues)) > q.MaxQueues:
		return refuse("queues", "quota exceeded: queues")
	}
	qs.add(tenantID, d)
	return nil, false
}

func (qs *quotas) add(tenantID string, d demand) {
	current := qs.epochs[len(qs.epochs)-1].byTenant
	s := current[tenantID]
	if s == nil {
		s = &stored{queues: map[string]bool{}}
		current[tenantID] = s
	}
	s.messages += d.messages
	s.bytes += d.bytes
	for _, n := range d.queues {
		if snap := qs.snapshot[tenantID]; snap == nil || !snap.queues[n] {
			s.queues[n] = true
		}
	}
}

// usage returns the tenant's stored messages, bytes and queues as the proxy counts
// them, and when the snapshot was taken.
func (qs *quotas) usage(tenantID string) (messages, bytes, queues int64, at time.Time) {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	messages, bytes, names := qs.counted(tenantID)
	return messages, bytes, int64(len(names)), qs.snapshotAt
}

// apply replaces the snapshot, drops the epochs that ended before it was computed at
// computed (it counts what they admitted; zero: unknown, counted as of the fetch,
// so every epoch goes), and starts a new epoch.
func (qs *quotas) apply(s *api.TenancyUsage, computed time.Time) {
	snap := map[string]*stored{}
	for _, t := range s.Tenants {
		st := &stored{messages: t.Messages, bytes: t.Bytes, queues: map[string]bool{}}
		for _, q := range t.Queues {
			st.queues[q] = true
		}
		snap[t.Tenant] = st
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	now := qs.now()
	keep := qs.epochs[:0]
	for i, e := range qs.epochs {
		end := now
		if i+1 < len(qs.epochs) {
			end = qs.epochs[i+1].start
		}
		// A snapshot without its time counts what was stored at its fetch.
		if !computed.IsZero() && !end.Before(computed.Add(-snapshotSkew)) {
			keep = append(keep, e)
		}
	}
	clear(qs.epochs[len(keep):])
	qs.snapshot, qs.snapshotAt = snap, now
	qs.epochs = append(keep, epoch{start: now, byTenant: map[string]*stored{}})
}

// age is how old the snapshot is; very large when there is none.
func (qs *quotas) age() time.Duration {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	return qs.now().Sub(qs.snapshotAt)
}

// RunSnapshots fetches the usage snapshot from a broker of every cell at once and
// every refresh interval until ctx is done, feeding the quotas and the meter's gauges.
// Each cell is fetched on its own, so that a slow cell delays nobody else's. A cell
// whose last fetch failed keeps its last snapshot; the merged snapshot counts as
// computed at the oldest time among the cells whose last fetch succeeded, so what was
// admitted since is never left out for them. (A cell that does not answer is down
// for its tenants, who cannot push meanwhile.)
func (s *Server) RunSnapshots(ctx context.Context) {
	tick := time.NewTicker(s.quotas.refresh)
	defer tick.Stop()
	type result struct {
		cell string
		snap *cellSnapshot
		err  error
	}
	results := make(chan result)
	last := map[string]*cellSnapshot{}
	ok := map[string]bool{}
	warned := map[string]bool{}
	inflight := map[string]bool{}
	round := func() {
		for _, ce := range s.cells.all() {
			if inflight[ce.name] {
				continue
			}
			inflight[ce.name] = true
			go func() {
				var snap api.TenancyUsage
				err := ce.pool.Get(ctx, "/internal/api/tenancy/usage", &snap)
				var computed time.Time
				if err == nil {
					computed, err = computedAt(&snap)
				}
				select {
				case results <- result{cell: ce.name, snap: &cellSnapshot{usage: &snap, computed: computed}, err: err}:
				case <-ctx.Done():
				}
			}()
		}
	}
	round()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			round()
		case r := <-results:
			inflight[r.cell] = false
			if r.err != nil {
				ok[r.cell] = false
				if !warned[r.cell] && ctx.Err() == nil {
					s.logger.Warn("usage snapshot unavailable; quotas use the last one", "cell", r.cell, "err", r.err)
					warned[r.cell] = true
				}
				continue
			}
			warned[r.cell], ok[r.cell], last[r.cell] = false, true, r.snap
			s.applySnapshots(last, ok)
		}
	}
}

// cellSnapshot is one cell's last usage snapshot.
type cellSnapshot struct {
	usage    *api.TenancyUsage
	computed time.Time
}

// applySnapshots merges the cells' snapshots: a tenant found in two cells (a move in
// progress) counts as its current cell says, else as the larger. The merged snapshot's
// time is the oldest of the fresh cells'.
func (s *Server) applySnapshots(byCell map[string]*cellSnapshot, fresh map[string]bool) {
	merged := map[string]api.TenantUsage{}
	var oldest time.Time
	known := s.cells.all()
	for _, ce := range known {
		cs := byCell[ce.name]
		if cs == nil {
			continue
		}
		if fresh[ce.name] && (oldest.IsZero() || cs.computed.Before(oldest)) {
			oldest = cs.computed
		}
		for _, t := range cs.usage.Tenants {
			prev, seen := merged[t.Tenant]
			if seen {
				at, moving := s.moves.current(t.Tenant)
				if moving && at != ce.name || !moving && t.Messages <= prev.Messages {
					continue
				}
			}
			merged[t.Tenant] = t
		}
	}
	all := api.TenancyUsage{Tenants: make([]api.TenantUsage, 0, len(merged))}
	for _, t := range merged {
		all.Tenants = append(all.Tenants, t)
	}
	s.quotas.apply(&all, oldest)
	for _, t := range all.Tenants {
		s.meter.SetStored(t.Tenant, t.Messages, t.Bytes, int64(len(t.Queues)))
		s.metrics.storedMessages.WithLabelValues(t.Tenant).Set(float64(t.Messages))
		s.metrics.storedBytes.WithLabelValues(t.Tenant).Set(float64(t.Bytes))
	}
	s.logger.Debug("usage snapshot", "tenants", len(all.Tenants), "cells", len(byCell), slog.Time("computed_at", oldest))
}
