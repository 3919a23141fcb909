package admin

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/manage"
)

func (s *Server) keyList(w http.ResponseWriter, r *http.Request) error {
	keys, err := s.manage.Keys(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.ProxyKeyList{Keys: List(keys, KeyBody)})
	return nil
}

func (s *Server) keyCreate(w http.ResponseWriter, r *http.Request) error {
	var req api.ProxyKeyCreate
	if err := decodeChecked(r, &req, timeMember("expiresAt")); err != nil {
		return err
	}
	k, err := s.manage.CreateKey(r.Context(), chi.URLParam(r, "id"), manage.KeySpec(req), actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, NewKeyBody(k))
	return nil
}

func (s *Server) keyRotate(w http.ResponseWriter, r *http.Request) error {
	var req api.ProxyKeyRotate
	if err := decodeOptional(r, &req); err != nil {
		return err
	}
	var grace *time.Duration
	if req.GraceSeconds != nil {
		g := time.Duration(-1) // out of range, refused by RotateKey (and never overflowed into range)
		if sec := *req.GraceSeconds; sec >= 0 && sec <= int64(manage.MaxGrace/time.Second) {
			g = time.Duration(sec) * time.Second
		}
		grace = &g
	}
	k, err := s.manage.RotateKey(r.Context(), chi.URLParam(r, "id"), grace, actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, NewKeyBody(k))
	return nil
}

func (s *Server) keyRevoke(w http.ResponseWriter, r *http.Request) error {
	k, err := s.manage.RevokeKey(r.Context(), chi.URLParam(r, "id"), actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, KeyBody(k))
	return nil
}
