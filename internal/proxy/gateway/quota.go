package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/queenmq/queen/internal/proxy/tenant"
)

// usageSnapshot is the answer of GET /internal/api/tenancy/usage.
type usageSnapshot struct {
	ComputedAt time.Time `json:"computedAt"`
	Tenants    []struct {
		Tenant     string   `json:"tenant"`
		Queues     []string `json:"queues"`
		Partitions int64    `json:"partitions"`
		Messages   int64    `json:"messages"`
		Bytes      int64    `json:"bytes"`
	} `json:"tenants"`
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
	since      map[string]*stored
}

func newQuotas(refresh time.Duration, failClosed bool, now func() time.Time) *quotas {
	return &quotas{refresh: refresh, failClosed: failClosed, now: now,
		snapshot: map[string]*stored{}, since: map[string]*stored{}}
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
	snap, since := qs.snapshot[tenantID], qs.since[tenantID]
	var msgs, bytes int64
	queues := map[string]bool{}
	for _, s := range []*stored{snap, since} {
		if s != nil {
			msgs += s.messages
			bytes += s.bytes
			for n := range s.queues {
				queues[n] = true
			}
		}
	}
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
	s := qs.since[tenantID]
	if s == nil {
		s = &stored{queues: map[string]bool{}}
		qs.since[tenantID] = s
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
	names := map[string]bool{}
	for _, s := range []*stored{qs.snapshot[tenantID], qs.since[tenantID]} {
		if s != nil {
			messages += s.messages
			bytes += s.bytes
			for n := range s.queues {
				names[n] = true
			}
		}
	}
	return messages, bytes, int64(len(names)), qs.snapshotAt
}

// apply replaces the snapshot and restarts the counts admitted since.
func (qs *quotas) apply(s *usageSnapshot) {
	snap := map[string]*stored{}
	for _, t := range s.Tenants {
		st := &stored{messages: t.Messages, bytes: t.Bytes, queues: map[string]bool{}}
		for _, q := range t.Queues {
			st.queues[q] = true
		}
		snap[t.Tenant] = st
	}
	qs.mu.Lock()
	qs.snapshot, qs.since, qs.snapshotAt = snap, map[string]*stored{}, qs.now()
	qs.mu.Unlock()
}

// age is how old the snapshot is; very large when there is none.
func (qs *quotas) age() time.Duration {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	return qs.now().Sub(qs.snapshotAt)
}

// RunSnapshots fetches the usage snapshot from a broker at once and every refresh
// interval until ctx is done, feeding the quotas and the meter's gauges.
func (s *Server) RunSnapshots(ctx context.Context) {
	tick := time.NewTicker(s.quotas.refresh)
	defer tick.Stop()
	warned := false
	for {
		if ctx.Err() != nil {
			return
		}
		var snap usageSnapshot
		if err := s.pool.Get(ctx, "/internal/api/tenancy/usage", &snap); err != nil {
			if !warned && ctx.Err() == nil {
				s.logger.Warn("usage snapshot unavailable; quotas use the last one", "err", err)
				warned = true
			}
		} else {
			warned = false
			s.quotas.apply(&snap)
			for _, t := range snap.Tenants {
				s.meter.SetStored(t.Tenant, t.Messages, t.Bytes, int64(len(t.Queues)))
				s.metrics.storedMessages.WithLabelValues(t.Tenant).Set(float64(t.Messages))
				s.metrics.storedBytes.WithLabelValues(t.Tenant).Set(float64(t.Bytes))
			}
			s.logger.Debug("usage snapshot", "tenants", len(snap.Tenants), slog.Time("computed_at", snap.ComputedAt))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
