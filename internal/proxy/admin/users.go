package admin

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/manage"
)

func (s *Server) userList(w http.ResponseWriter, r *http.Request) error {
	us, err := s.manage.Users(r.Context(), r.URL.Query().Get("tenant"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.ProxyUserList{Users: List(us, UserBody)})
	return nil
}

func (s *Server) userCreate(w http.ResponseWriter, r *http.Request) error {
	var req api.ProxyUserCreate
	if err := decode(r, &req); err != nil {
		return err
	}
	u, err := s.manage.CreateUser(r.Context(), manage.UserSpec(req), actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, UserBody(u))
	return nil
}

func (s *Server) userGet(w http.ResponseWriter, r *http.Request) error {
	u, err := s.manage.User(r.Context(), chi.URLParam(r, "name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, UserBody(u))
	return nil
}

func (s *Server) userDelete(w http.ResponseWriter, r *http.Request) error {
	if err := s.manage.DeleteUser(r.Context(), chi.URLParam(r, "name"), actor(r)); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.ProxyUserDeleted{Deleted: true})
	return nil
}

func (s *Server) userPassword(w http.ResponseWriter, r *http.Request) error {
	var req api.ProxyPassword
	if err := decode(r, &req); err != nil {
		return err
	}
	u, err := s.manage.SetPassword(r.Context(), chi.URLParam(r, "name"), req.Password, actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, UserBody(u))
	return nil
}
