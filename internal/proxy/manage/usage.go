package manage

import (
	"context"
	"time"

	"github.com/queenmq/queen/internal/proxy/tenant"
)

// UsageSpan is a usage report's span and bucket size.
type UsageSpan struct {
	From, To    time.Time
	Granularity tenant.Granularity
}

// ParseUsageSpan reads from and to (RFC 3339, to exclusive; default the 24 h up to
// a minute from now) and the granularity (minute, hour or day; default hour), and
// bounds the span: 24 h of minutes, 31 d of hours, 400 d of days.
func ParseUsageSpan(from, to, granularity string, now time.Time) (UsageSpan, error) {
	sp := UsageSpan{Granularity: tenant.Granularity(granularity)}
	if sp.Granularity == "" {
		sp.Granularity = tenant.GranularityHour
	}
	if sp.Granularity.MaxSpan() == 0 {
		return sp, invalid("granularity", "must be minute, hour or day")
	}
	sp.To = now.Add(time.Minute)
	var err error
	if to != "" {
		if sp.To, err = time.Parse(time.RFC3339, to); err != nil {
			return sp, invalid("to", "must be RFC 3339 (2006-01-02T15:04:05Z)")
		}
	}
	sp.From = sp.To.Add(-min(24*time.Hour, sp.Granularity.MaxSpan()))
	if from != "" {
		if sp.From, err = time.Parse(time.RFC3339, from); err != nil {
			return sp, invalid("from", "must be RFC 3339 (2006-01-02T15:04:05Z)")
		}
	}
	if !sp.From.Before(sp.To) || sp.To.Sub(sp.From) > sp.Granularity.MaxSpan() {
		return sp, invalid("from", "must be before to, within the granularity's span (minute 24h, hour 31d, day 400d)")
	}
	sp.From = sp.Granularity.Truncate(sp.From)
	return sp, nil
}

// SeriesPoint is one bucket of a usage series.
type SeriesPoint struct {
	Start time.Time
	tenant.Usage
}

// Report is one tenant's usage over a span: the series and its totals.
type Report struct {
	Tenant      string
	Granularity tenant.Granularity
	From        time.Time
	To          time.Time
	Series      []SeriesPoint
	Totals      tenant.Usage
}

// TenantUsage is the report of one tenant (tenant.ErrNotFound for no tenant).
func (m *Manager) TenantUsage(ctx context.Context, tenantID string, sp UsageSpan) (*Report, error) {
	if _, err := m.store.TenantGet(ctx, tenantID); err != nil {
		return nil, err
	}
	points, err := m.store.UsageSeries(ctx, tenantID, sp.From, sp.To, sp.Granularity)
	if err != nil {
		return nil, err
	}
	r := &Report{Tenant: tenantID, Granularity: sp.Granularity, From: sp.From, To: sp.To, Series: []SeriesPoint{}}
	for _, p := range points {
		r.Series = append(r.Series, SeriesPoint{Start: p.Start, Usage: p.Usage})
		r.Totals.Add(p.Usage)
	}
	return r, nil
}

// TenantTotal is one tenant's totals in an all-tenants report.
type TenantTotal struct {
	Tenant string
	Totals tenant.Usage
}

// Totals is every tenant's totals over a span.
type Totals struct {
	Granularity tenant.Granularity
	From        time.Time
	To          time.Time
	Tenants     []TenantTotal
}

// AllUsage is the totals of every tenant with usage in the span, by tenant id.
func (m *Manager) AllUsage(ctx context.Context, sp UsageSpan) (*Totals, error) {
	points, err := m.store.UsageSeries(ctx, "", sp.From, sp.To, sp.Granularity)
	if err != nil {
		return nil, err
	}
	out := &Totals{Granularity: sp.Granularity, From: sp.From, To: sp.To, Tenants: []TenantTotal{}}
	for _, p := range points {
		if n := len(out.Tenants); n == 0 || out.Tenants[n-1].Tenant != p.Tenant {
			out.Tenants = append(out.Tenants, TenantTotal{Tenant: p.Tenant})
		}
		out.Tenants[len(out.Tenants)-1].Totals.Add(p.Usage)
	}
	return out, nil
}
