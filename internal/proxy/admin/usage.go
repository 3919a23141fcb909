package admin

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/queenmq/queen/internal/proxy/tenant"
)

// usageQuery reads from, to (RFC 3339, to exclusive; default the last 24 h) and
// granularity (default hour), and bounds the span.
func usageQuery(r *http.Request, now time.Time) (from, to time.Time, g tenant.Granularity, err error) {
	q := r.URL.Query()
	g = tenant.Granularity(q.Get("granularity"))
	if g == "" {
		g = tenant.GranularityHour
	}
	if g.MaxSpan() == 0 {
		return from, to, g, badRequest("granularity must be minute, hour or day")
	}
	to = now.Add(time.Minute)
	from = to.Add(-24 * time.Hour)
	if v := q.Get("to"); v != "" {
		if to, err = time.Parse(time.RFC3339, v); err != nil {
			return from, to, g, badRequest("to must be RFC 3339")
		}
	}
	if v := q.Get("from"); v != "" {
		if from, err = time.Parse(time.RFC3339, v); err != nil {
			return from, to, g, badRequest("from must be RFC 3339")
		}
	} else {
		from = to.Add(-min(24*time.Hour, g.MaxSpan()))
	}
	if !from.Before(to) || to.Sub(from) > g.MaxSpan() {
		return from, to, g, badRequest("from must be before to, within the granularity's span (24h, 31d, 400d)")
	}
	return g.Truncate(from), to, g, nil
}

// seriesPoint is one bucket of U.series.
type seriesPoint struct {
	Start time.Time `json:"start"`
	tenant.Usage
}

// usageView is U of the admin API.
type usageView struct {
	Tenant      string             `json:"tenant"`
	Granularity tenant.Granularity `json:"granularity"`
	From        time.Time          `json:"from"`
	To          time.Time          `json:"to"`
	Series      []seriesPoint      `json:"series"`
	Totals      tenant.Usage       `json:"totals"`
}

func (s *Server) tenantUsage(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	if _, err := s.opts.Store.TenantGet(r.Context(), id); err != nil {
		return err
	}
	from, to, g, err := usageQuery(r, s.opts.Now())
	if err != nil {
		return err
	}
	points, err := s.opts.Store.UsageSeries(r.Context(), id, from, to, g)
	if err != nil {
		return err
	}
	v := usageView{Tenant: id, Granularity: g, From: from, To: to, Series: []seriesPoint{}}
	for _, p := range points {
		v.Series = append(v.Series, seriesPoint{Start: p.Start, Usage: p.Usage})
		v.Totals.Add(p.Usage)
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) allUsage(w http.ResponseWriter, r *http.Request) error {
	from, to, g, err := usageQuery(r, s.opts.Now())
	if err != nil {
		return err
	}
	points, err := s.opts.Store.UsageSeries(r.Context(), "", from, to, g)
	if err != nil {
		return err
	}
	totals := map[string]*tenant.Usage{}
	var order []string
	for _, p := range points {
		if totals[p.Tenant] == nil {
			totals[p.Tenant] = &tenant.Usage{}
			order = append(order, p.Tenant)
		}
		totals[p.Tenant].Add(p.Usage)
	}
	out := []map[string]any{}
	for _, t := range order {
		out = append(out, map[string]any{"tenant": t, "totals": totals[t]})
	}
	writeJSON(w, http.StatusOK, map[string]any{"granularity": g, "from": from, "to": to, "tenants": out})
	return nil
}

func (s *Server) upstreams(w http.ResponseWriter, _ *http.Request) error {
	out := []map[string]string{}
	for _, u := range s.opts.Gateway.Pool().Upstreams() {
		out = append(out, map[string]string{"url": u.URL.String(), "state": u.State()})
	}
	writeJSON(w, http.StatusOK, map[string]any{"upstreams": out})
	return nil
}

func (s *Server) replicas(w http.ResponseWriter, r *http.Request) error {
	rs, err := s.opts.Store.ReplicaList(r.Context(), 15*time.Second)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"replicas": rs})
	return nil
}
