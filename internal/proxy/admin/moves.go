package admin

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/manage"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

func (s *Server) tenantMove(w http.ResponseWriter, r *http.Request) error {
	var req api.ProxyMoveCreate
	if err := decode(r, &req); err != nil {
		return err
	}
	m, err := s.manage.MoveTenant(r.Context(), chi.URLParam(r, "id"), req.Cell, actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, MoveBody(m))
	return nil
}

func (s *Server) moveList(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit := manage.DefaultMovePage
	if v := q.Get("limit"); v != "" {
		var err error
		if limit, err = strconv.Atoi(v); err != nil {
			return &tenant.ValidationError{Field: "limit", Msg: "must be an integer"}
		}
	}
	ms, err := s.manage.Moves(r.Context(), q.Get("tenant"), limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.ProxyMoveList{Moves: List(ms, MoveBody)})
	return nil
}

func (s *Server) moveGet(w http.ResponseWriter, r *http.Request) error {
	m, err := s.manage.Move(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, MoveBody(m))
	return nil
}

func (s *Server) moveCancel(w http.ResponseWriter, r *http.Request) error {
	m, err := s.manage.CancelMove(r.Context(), chi.URLParam(r, "id"), actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, MoveBody(m))
	return nil
}
