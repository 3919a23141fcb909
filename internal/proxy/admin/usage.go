package admin

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/manage"
)

func (s *Server) usageSpan(r *http.Request) (manage.UsageSpan, error) {
	q := r.URL.Query()
	return manage.ParseUsageSpan(q.Get("from"), q.Get("to"), q.Get("granularity"), s.opts.Now())
}

func (s *Server) tenantUsage(w http.ResponseWriter, r *http.Request) error {
	sp, err := s.usageSpan(r)
	if err != nil {
		return err
	}
	rep, err := s.manage.TenantUsage(r.Context(), chi.URLParam(r, "id"), sp)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ReportBody(rep))
	return nil
}

func (s *Server) allUsage(w http.ResponseWriter, r *http.Request) error {
	sp, err := s.usageSpan(r)
	if err != nil {
		return err
	}
	tot, err := s.manage.AllUsage(r.Context(), sp)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, TotalsBody(tot))
	return nil
}

// backends is GET /admin/v1/upstreams: every cell's brokers and their states (the
// route and its JSON keep their published name).
func (s *Server) backends(w http.ResponseWriter, _ *http.Request) error {
	out := []api.ProxyUpstream{}
	for _, name := range s.opts.Gateway.Cells() {
		for _, u := range s.opts.Gateway.CellBrokers(name) {
			out = append(out, api.ProxyUpstream{State: u.State(), URL: u.URL.String(), Cell: name})
		}
	}
	writeJSON(w, http.StatusOK, api.ProxyUpstreams{Upstreams: out})
	return nil
}

func (s *Server) replicas(w http.ResponseWriter, r *http.Request) error {
	rs, err := s.opts.Store.ReplicaList(r.Context(), 15*time.Second)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.ProxyReplicas{Replicas: List(rs, replicaBody)})
	return nil
}
