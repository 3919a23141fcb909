package admin

import (
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// Rotation grace: the old key keeps working this long (default 24 h, at most 7 d).
const (
	defaultGrace = 24 * time.Hour
	maxGrace     = 7 * 24 * time.Hour
)

// newKeyView is K plus the key text, shown once.
type newKeyView struct {
	*tenant.Key
	Secret string `json:"key"`
}

func (s *Server) keyList(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	if _, err := s.opts.Store.TenantGet(r.Context(), id); err != nil {
		return err
	}
	keys, err := s.opts.Store.KeyList(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
	return nil
}

func (s *Server) keyCreate(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Name      string     `json:"name"`
		Scope     string     `json:"scope"`
		Queues    []string   `json:"queues"`
		ExpiresAt *time.Time `json:"expiresAt"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	scope, err := tenant.ParseScope(req.Scope)
	if err != nil {
		return err
	}
	if err := tenant.ValidateQueuePatterns(req.Queues); err != nil {
		return err
	}
	if req.ExpiresAt != nil && !req.ExpiresAt.After(s.opts.Now()) {
		return badRequest("expiresAt must be in the future")
	}
	id, text := tenant.NewKey()
	k, err := s.opts.Store.KeyCreate(r.Context(), store.NewKey{Hash: tenant.HashKey(text), Key: tenant.Key{
		ID: id, Tenant: chi.URLParam(r, "id"), Name: req.Name, Scope: scope, Queues: req.Queues, ExpiresAt: req.ExpiresAt,
	}}, actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, newKeyView{Key: k, Secret: text})
	return nil
}

func (s *Server) keyRotate(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		GraceSeconds *int64 `json:"graceSeconds"`
	}
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil && !errors.Is(err, io.EOF) {
			var he *httpError
			if !errors.As(err, &he) || r.ContentLength > 0 {
				return err
			}
		}
	}
	grace := defaultGrace
	if req.GraceSeconds != nil {
		grace = time.Duration(*req.GraceSeconds) * time.Second
		if grace < 0 || grace > maxGrace {
			return badRequest("graceSeconds must be 0..604800")
		}
	}
	id, text := tenant.NewKey()
	k, err := s.opts.Store.KeyRotate(r.Context(), chi.URLParam(r, "id"), grace,
		store.NewKey{Hash: tenant.HashKey(text), Key: tenant.Key{ID: id}}, actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, newKeyView{Key: k, Secret: text})
	return nil
}

func (s *Server) keyRevoke(w http.ResponseWriter, r *http.Request) error {
	k, err := s.opts.Store.KeyRevoke(r.Context(), chi.URLParam(r, "id"), actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, k)
	return nil
}
