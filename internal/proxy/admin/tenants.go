package admin

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/manage"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// view is the admin API's tenant: the record plus its storage as quotas see it and
// its live move, if any.
func (s *Server) view(t *tenant.Tenant, move *tenant.Move) api.ProxyTenant {
	out := TenantBody(t, s.opts.Gateway.Stored(t.ID))
	if move != nil {
		m := MoveBody(move)
		out.Move = &m
	}
	return out
}

// viewOne is view with the tenant's live move read from the store.
func (s *Server) viewOne(r *http.Request, t *tenant.Tenant) (api.ProxyTenant, error) {
	m, err := s.manage.TenantMove(r.Context(), t.ID)
	if err != nil {
		return api.ProxyTenant{}, err
	}
	return s.view(t, m), nil
}

func (s *Server) tenantList(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, offset := manage.DefaultPageSize, 0
	var err error
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil {
			return &tenant.ValidationError{Field: "limit", Msg: "must be an integer"}
		}
	}
	if v := q.Get("offset"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil {
			return &tenant.ValidationError{Field: "offset", Msg: "must be an integer"}
		}
	}
	ts, total, err := s.manage.ListTenants(r.Context(), q.Get("status"), limit, offset)
	if err != nil {
		return err
	}
	moves, err := s.manage.LiveMoves(r.Context())
	if err != nil {
		return err
	}
	out := make([]api.ProxyTenant, 0, len(ts))
	for _, t := range ts {
		out = append(out, s.view(t, moves[t.ID]))
	}
	writeJSON(w, http.StatusOK, api.ProxyTenantList{Tenants: out, Total: total})
	return nil
}

func (s *Server) tenantCreate(w http.ResponseWriter, r *http.Request) error {
	var req api.ProxyTenantCreate
	if err := decode(r, &req); err != nil {
		return err
	}
	created, err := s.manage.CreateTenant(r.Context(), manage.TenantSpec(req), actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, s.view(created, nil))
	return nil
}

func (s *Server) tenantGet(w http.ResponseWriter, r *http.Request) error {
	t, err := s.manage.Tenant(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	v, err := s.viewOne(r, t)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) tenantPatch(w http.ResponseWriter, r *http.Request) error {
	var req api.ProxyTenantChange
	if err := decode(r, &req); err != nil {
		return err
	}
	t, err := s.manage.UpdateTenant(r.Context(), chi.URLParam(r, "id"), manage.TenantChange(req), actor(r))
	if err != nil {
		return err
	}
	v, err := s.viewOne(r, t)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) tenantDelete(w http.ResponseWriter, r *http.Request) error {
	n, err := s.manage.DeleteTenant(r.Context(), chi.URLParam(r, "id"), actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.ProxyTenantDeleted{Deleted: true, KeysRevoked: n})
	return nil
}
