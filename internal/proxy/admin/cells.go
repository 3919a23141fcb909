package admin

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/manage"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// CellUpstream is one broker of a cell and its state as the gateway's health
// checks see it: up, down or misconfigured.
type CellUpstream struct {
	URL   string
	State string
}

// cellView is a cell as the admin API answers it, its brokers' states from
// Options.CellHealth ("unknown" without it, or for a broker it does not report).
func (s *Server) cellView(c *tenant.CellStats) api.ProxyCell {
	var health []CellUpstream
	if s.opts.CellHealth != nil {
		health = s.opts.CellHealth(c.Name)
	}
	return CellBody(c, health)
}

func (s *Server) cellList(w http.ResponseWriter, r *http.Request) error {
	cs, err := s.manage.Cells(r.Context())
	if err != nil {
		return err
	}
	out := make([]api.ProxyCell, 0, len(cs))
	for _, c := range cs {
		out = append(out, s.cellView(c))
	}
	writeJSON(w, http.StatusOK, api.ProxyCellList{Cells: out})
	return nil
}

func (s *Server) cellCreate(w http.ResponseWriter, r *http.Request) error {
	var req api.ProxyCellCreate
	if err := decode(r, &req); err != nil {
		return err
	}
	c, err := s.manage.CreateCell(r.Context(), manage.CellSpec(req), actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, s.cellView(c))
	return nil
}

func (s *Server) cellGet(w http.ResponseWriter, r *http.Request) error {
	c, err := s.manage.Cell(r.Context(), chi.URLParam(r, "name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.cellView(c))
	return nil
}

func (s *Server) cellPatch(w http.ResponseWriter, r *http.Request) error {
	var req api.ProxyCellChange
	if err := decode(r, &req); err != nil {
		return err
	}
	c, err := s.manage.UpdateCell(r.Context(), chi.URLParam(r, "name"), manage.CellChange(req), actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.cellView(c))
	return nil
}

func (s *Server) cellDelete(w http.ResponseWriter, r *http.Request) error {
	if err := s.manage.DeleteCell(r.Context(), chi.URLParam(r, "name"), actor(r)); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.ProxyCellDeleted{Deleted: true})
	return nil
}
