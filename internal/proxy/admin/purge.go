package admin

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/gateway"
	"github.com/queenmq/queen/internal/proxy/manage"
)

// tenantPurge deletes a suspended or deleted tenant's queues at the brokers; the
// purge goes to the audit log.
func (s *Server) tenantPurge(w http.ResponseWriter, r *http.Request) error {
	n, err := s.manage.PurgeTenant(r.Context(), chi.URLParam(r, "id"), s.opts.Gateway.Purge, actor(r))
	switch {
	case errors.Is(err, manage.ErrTenantActive):
		return &httpError{status: http.StatusConflict, code: api.ErrorCodeConflict, msg: "suspend or delete the tenant before purging it"}
	case errors.Is(err, gateway.ErrPurgeUnavailable):
		w.Header().Set("Retry-After", "1")
		return &httpError{status: http.StatusServiceUnavailable, code: api.ErrorCodeUnavailable, msg: "no broker is available for the purge"}
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusOK, api.ProxyPurged{QueuesDeleted: n})
	return nil
}
