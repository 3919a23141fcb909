package admin

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/queenmq/queen/internal/proxy/tenant"
)

// tenantView is T of the admin API: the tenant plus its storage as quotas see it.
type tenantView struct {
	*tenant.Tenant
	Usage *storedView `json:"usage,omitempty"`
}

type storedView struct {
	Messages   int64      `json:"messages"`
	Bytes      int64      `json:"bytes"`
	Queues     int64      `json:"queues"`
	ComputedAt *time.Time `json:"computedAt"`
}

func (s *Server) view(t *tenant.Tenant) tenantView {
	m, b, q, at := s.opts.Gateway.StoredUsage(t.ID)
	v := &storedView{Messages: m, Bytes: b, Queues: q}
	if !at.IsZero() {
		v.ComputedAt = &at
	}
	return tenantView{Tenant: t, Usage: v}
}

func (s *Server) tenantList(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	status := q.Get("status")
	switch tenant.Status(status) {
	case "", tenant.StatusActive, tenant.StatusSuspended, tenant.StatusDeleted:
	default:
		return badRequest("status must be active, suspended or deleted")
	}
	limit, offset := 100, 0
	var err error
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 1000 {
			return badRequest("limit must be 1..1000")
		}
	}
	if v := q.Get("offset"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil || offset < 0 {
			return badRequest("offset must be >= 0")
		}
	}
	ts, total, err := s.opts.Store.TenantList(r.Context(), status, limit, offset)
	if err != nil {
		return err
	}
	out := make([]tenantView, 0, len(ts))
	for _, t := range ts {
		out = append(out, s.view(t))
	}
	writeJSON(w, http.StatusOK, map[string]any{"tenants": out, "total": total})
	return nil
}

func (s *Server) tenantCreate(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		ID     string          `json:"id"`
		Name   string          `json:"name"`
		Limits json.RawMessage `json:"limits"`
		Quotas json.RawMessage `json:"quotas"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := tenant.ValidateID(req.ID); err != nil {
		return err
	}
	t := &tenant.Tenant{ID: req.ID, Name: req.Name, Limits: tenant.DefaultLimits(), Quotas: tenant.DefaultQuotas()}
	if t.Name == "" {
		t.Name = t.ID
	}
	var err error
	if req.Limits != nil {
		if t.Limits, err = tenant.MergeLimits(t.Limits, req.Limits); err != nil {
			return err
		}
	}
	if req.Quotas != nil {
		if t.Quotas, err = tenant.MergeQuotas(t.Quotas, req.Quotas); err != nil {
			return err
		}
	}
	created, err := s.opts.Store.TenantCreate(r.Context(), t, actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, s.view(created))
	return nil
}

func (s *Server) tenantGet(w http.ResponseWriter, r *http.Request) error {
	t, err := s.opts.Store.TenantGet(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.view(t))
	return nil
}

func (s *Server) tenantPatch(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Name   *string         `json:"name"`
		Status *string         `json:"status"`
		Limits json.RawMessage `json:"limits"`
		Quotas json.RawMessage `json:"quotas"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	t, err := s.opts.Store.TenantUpdate(r.Context(), chi.URLParam(r, "id"), func(t *tenant.Tenant) (err error) {
		if req.Name != nil {
			t.Name = *req.Name
		}
		if req.Status != nil {
			switch st := tenant.Status(*req.Status); st {
			case tenant.StatusActive, tenant.StatusSuspended:
				t.Status = st
			default:
				return badRequest("status must be active or suspended (DELETE deletes)")
			}
		}
		if req.Limits != nil {
			if t.Limits, err = tenant.MergeLimits(t.Limits, req.Limits); err != nil {
				return err
			}
		}
		if req.Quotas != nil {
			t.Quotas, err = tenant.MergeQuotas(t.Quotas, req.Quotas)
		}
		return err
	}, actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.view(t))
	return nil
}

func (s *Server) tenantDelete(w http.ResponseWriter, r *http.Request) error {
	n, err := s.opts.Store.TenantDelete(r.Context(), chi.URLParam(r, "id"), actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": true, "keysRevoked": n})
	return nil
}

// tenantPurge needs the brokers' tenant scope, which this build does not drive yet.
func (s *Server) tenantPurge(_ http.ResponseWriter, r *http.Request) error {
	t, err := s.opts.Store.TenantGet(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	if t.Status == tenant.StatusActive {
		return &httpError{status: http.StatusConflict, code: "conflict", msg: "suspend or delete the tenant before purging it"}
	}
	return &httpError{status: http.StatusServiceUnavailable, code: "unavailable", msg: "purge needs the brokers' tenant scope, not available yet"}
}
