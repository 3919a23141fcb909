package admin

import (
	"encoding/json"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/gateway"
	"github.com/queenmq/queen/internal/proxy/manage"
	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// The conversions from the proxy's records to the admin API's bodies (package api),
// the one JSON form of those records: the admin API answers with them and
// `queen-proxy ... -o json` prints them. The records carry no JSON tags of their own.
// Where a record and its body have the same fields, a Go conversion does it, so a
// field added to one and not to the other stops the build instead of vanishing from
// the wire.

// TenantBody is a tenant and its storage as its quotas see it.
func TenantBody(t *tenant.Tenant, stored *gateway.Stored) api.ProxyTenant {
	out := api.ProxyTenant{ID: t.ID, Name: t.Name, Status: string(t.Status), Cell: t.Cell, CreatedAt: t.CreatedAt,
		UpdatedAt: t.UpdatedAt, Limits: api.ProxyLimits(t.Limits), Quotas: api.ProxyQuotas(t.Quotas)}
	if stored != nil {
		u := api.ProxyStored(*stored)
		out.Usage = &u
	}
	return out
}

// CellBody is a cell with its figures and its brokers' states from health (a broker
// health does not report is "unknown").
func CellBody(c *tenant.CellStats, health []CellUpstream) api.ProxyCell {
	states := make(map[string]string, len(health))
	for _, h := range health {
		states[h.URL] = h.State
	}
	ups := make([]api.ProxyCellUpstream, 0, len(c.Upstreams))
	for _, u := range c.Upstreams {
		st := states[u]
		if st == "" {
			st = "unknown"
		}
		ups = append(ups, api.ProxyCellUpstream{URL: u, State: st})
	}
	return api.ProxyCell{Name: c.Name, Upstreams: ups, CapacityBytes: c.CapacityBytes,
		CapacityMessagesPerSecond: c.CapacityMessagesPerSecond, Closed: c.Closed, Tenants: c.Tenants,
		StoredMessages: c.StoredMessages, StoredBytes: c.StoredBytes, PushRate: c.PushRate, PopRate: c.PopRate,
		Headroom: c.Headroom, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

// MoveBody is a move of a tenant between cells.
func MoveBody(m *tenant.Move) api.ProxyMove {
	out := api.ProxyMove{ID: m.ID, Tenant: m.Tenant, From: m.From, To: m.To, Phase: string(m.Phase), Progress: m.Progress,
		CancelRequested: m.CancelRequested, PauseMs: m.PauseMs, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt,
		FinishedAt: m.FinishedAt}
	if len(out.Progress) == 0 {
		out.Progress = json.RawMessage(`{}`)
	}
	if m.Error != "" {
		e := m.Error
		out.Error = &e
	}
	return out
}

// KeyBody is a key as the admin API shows it (never its text).
func KeyBody(k *tenant.Key) api.ProxyKey {
	return api.ProxyKey{ID: k.ID, Tenant: k.Tenant, Name: k.Name, Scope: string(k.Scope), Queues: k.Queues,
		CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt, LastUsedAt: k.LastUsedAt}
}

// NewKeyBody is a created key and its text, shown once.
func NewKeyBody(k *manage.NewKey) api.ProxyNewKey {
	return api.ProxyNewKey{ProxyKey: KeyBody(k.Key), Key: k.Secret}
}

// UserBody is a user as the admin API shows it (never the password hash).
func UserBody(u *tenant.User) api.ProxyUser {
	return api.ProxyUser{Username: u.Username, Role: u.Role, Tenant: u.Tenant, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

// ReportBody is one tenant's usage report.
func ReportBody(r *manage.Report) api.ProxyUsageReport {
	return api.ProxyUsageReport{Tenant: r.Tenant, Granularity: string(r.Granularity), From: r.From, To: r.To,
		Series: List(r.Series, func(p manage.SeriesPoint) api.ProxyUsagePoint {
			return api.ProxyUsagePoint{Start: p.Start, ProxyUsage: api.ProxyUsage(p.Usage)}
		}),
		Totals: api.ProxyUsage(r.Totals)}
}

// TotalsBody is every tenant's usage totals.
func TotalsBody(t *manage.Totals) api.ProxyUsageTotals {
	return api.ProxyUsageTotals{Granularity: string(t.Granularity), From: t.From, To: t.To,
		Tenants: List(t.Tenants, func(x manage.TenantTotal) api.ProxyTenantTotal {
			return api.ProxyTenantTotal{Tenant: x.Tenant, Totals: api.ProxyUsage(x.Totals)}
		})}
}

func replicaBody(r store.Replica) api.ProxyReplica { return api.ProxyReplica(r) }

// List converts each element of in with f; a nil list stays nil (JSON null), an
// empty one empty ([]), as the answers have always had them.
func List[T, W any](in []T, f func(T) W) []W {
	if in == nil {
		return nil
	}
	out := make([]W, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
