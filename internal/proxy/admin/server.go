package admin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/gateway"
	"github.com/queenmq/queen/internal/proxy/manage"
	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// Options are what the admin API is built from.
type Options struct {
	// Token is the admin bearer token; "" leaves operator sessions with role admin
	// as the only way in.
	Token    string
	Store    *store.Store
	Gateway  *gateway.Server
	Gatherer prometheus.Gatherer
	Logger   *slog.Logger
	Now      func() time.Time
	// PasswordCost is the bcrypt cost of new passwords (0 = 12; tests go lower).
	PasswordCost int
	// CellHealth returns the states of a cell's brokers from the gateway's health
	// checks, for GET /admin/v1/cells; nil (or a broker it leaves out) is "unknown".
	CellHealth func(cell string) []CellUpstream
}

// Server is the admin API's handler.
type Server struct {
	opts    Options
	manage  *manage.Manager
	digest  [32]byte
	handler http.Handler
}

// New builds the admin API.
func New(o Options) *Server {
	s := &Server{opts: o, manage: manage.New(o.Store, o.Now, o.PasswordCost), digest: sha256.Sum256([]byte(o.Token))}
	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) {
		writeErr(w, http.StatusNotFound, api.ErrorBody{Code: api.ErrorCodeNotFound, Error: "Not found"})
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		path := req.URL.RawPath
		if path == "" {
			path = req.URL.Path
		}
		var allowed []string
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if r.Match(chi.NewRouteContext(), m, path) {
				allowed = append(allowed, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeErr(w, http.StatusMethodNotAllowed, api.ErrorBody{Code: api.ErrorCodeMethodNotAllowed,
			Error: req.Method + " is not allowed here; allowed: " + strings.Join(allowed, ", ")})
	})
	live := func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, api.ProxyHealth{Status: "ok"})
	}
	ready := func(w http.ResponseWriter, r *http.Request) { s.opts.Gateway.Handler().ServeHTTP(w, r) }
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		r.MethodFunc(method, "/health", live)
		r.MethodFunc(method, "/health/live", live)
		r.MethodFunc(method, "/health/ready", ready)
	}
	r.Group(func(r chi.Router) {
		r.Use(s.authenticate, storableParams)
		r.Method(http.MethodGet, "/metrics/prometheus", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{}))
		r.Get("/admin/v1/tenants", s.handle(s.tenantList))
		r.Post("/admin/v1/tenants", s.handle(s.tenantCreate))
		r.Get("/admin/v1/tenants/{id}", s.handle(s.tenantGet))
		r.Patch("/admin/v1/tenants/{id}", s.handle(s.tenantPatch))
		r.Delete("/admin/v1/tenants/{id}", s.handle(s.tenantDelete))
		r.Post("/admin/v1/tenants/{id}/purge", s.handle(s.tenantPurge))
		r.Get("/admin/v1/tenants/{id}/keys", s.handle(s.keyList))
		r.Post("/admin/v1/tenants/{id}/keys", s.handle(s.keyCreate))
		r.Post("/admin/v1/keys/{id}/rotate", s.handle(s.keyRotate))
		r.Delete("/admin/v1/keys/{id}", s.handle(s.keyRevoke))
		r.Get("/admin/v1/tenants/{id}/usage", s.handle(s.tenantUsage))
		r.Get("/admin/v1/usage", s.handle(s.allUsage))
		r.Get("/admin/v1/users", s.handle(s.userList))
		r.Post("/admin/v1/users", s.handle(s.userCreate))
		r.Get("/admin/v1/users/{name}", s.handle(s.userGet))
		r.Delete("/admin/v1/users/{name}", s.handle(s.userDelete))
		r.Post("/admin/v1/users/{name}/password", s.handle(s.userPassword))
		r.Post("/admin/v1/tenants/{id}/move", s.handle(s.tenantMove))
		r.Get("/admin/v1/cells", s.handle(s.cellList))
		r.Post("/admin/v1/cells", s.handle(s.cellCreate))
		r.Get("/admin/v1/cells/{name}", s.handle(s.cellGet))
		r.Patch("/admin/v1/cells/{name}", s.handle(s.cellPatch))
		r.Delete("/admin/v1/cells/{name}", s.handle(s.cellDelete))
		r.Get("/admin/v1/moves", s.handle(s.moveList))
		r.Get("/admin/v1/moves/{id}", s.handle(s.moveGet))
		r.Post("/admin/v1/moves/{id}/cancel", s.handle(s.moveCancel))
		r.Get("/admin/v1/upstreams", s.handle(s.backends))
		r.Get("/admin/v1/replicas", s.handle(s.replicas))
	})
	s.handler = r
	return s
}

// Handler is the admin listener's root handler.
func (s *Server) Handler() http.Handler { return s.handler }

type actorKey struct{}

// authenticate requires the admin token or the session of an operator with role
// admin, and records which one in the request's context for the audit log.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
		who := ""
		switch {
		case len(r.Header.Values("Authorization")) > 1:
			// Which of two credentials counts would be a guess: neither does.
		case s.opts.Token != "" && strings.EqualFold(scheme, "bearer") && subtle.ConstantTimeCompare(got[:], s.digest[:]) == 1:
			who = "admin-token"
		default:
			if name, ok := s.opts.Gateway.AdminOperator(r); ok {
				who = "user:" + name
			}
		}
		if who == "" {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeErr(w, http.StatusUnauthorized, api.ErrorBody{Code: api.ErrorCodeUnauthenticated, Error: "Authentication required"})
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), actorKey{}, who)))
	})
}

type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle maps a handler's error to its status, code and message.
func (s *Server) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		var ve *tenant.ValidationError
		var he *httpError
		switch {
		case errors.As(err, &he):
			writeErr(w, he.status, api.ErrorBody{Code: he.code, Error: he.msg})
		case errors.As(err, &ve):
			writeErr(w, http.StatusBadRequest, api.ErrorBody{Code: api.ErrorCodeInvalidArgument, Error: ve.Error(), Field: ve.Field})
		case errors.Is(err, tenant.ErrNotFound):
			writeErr(w, http.StatusNotFound, api.ErrorBody{Code: api.ErrorCodeNotFound, Error: "not found"})
		case errors.Is(err, tenant.ErrIDNeverReused):
			writeErr(w, http.StatusConflict, api.ErrorBody{Code: api.ErrorCodeAlreadyExists, Error: tenant.ErrIDNeverReused.Error()})
		case errors.Is(err, tenant.ErrAlreadyExists):
			writeErr(w, http.StatusConflict, api.ErrorBody{Code: api.ErrorCodeAlreadyExists, Error: "already exists"})
		case errors.Is(err, tenant.ErrConflict):
			writeErr(w, http.StatusConflict, api.ErrorBody{Code: api.ErrorCodeConflict, Error: err.Error()})
		case errors.Is(err, tenant.ErrUnavailable):
			w.Header().Set("Retry-After", "1")
			writeErr(w, http.StatusServiceUnavailable, api.ErrorBody{Code: api.ErrorCodeUnavailable, Error: "proxy database unavailable"})
		default:
			s.opts.Logger.Error("admin request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			writeErr(w, http.StatusInternalServerError, api.ErrorBody{Code: api.ErrorCodeInternal, Error: "internal server error"})
		}
	}
}

// httpError is an answer chosen by the handler.
type httpError struct {
	status int
	code   api.ErrorCode
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(msg string) error {
	return &httpError{status: http.StatusBadRequest, code: api.ErrorCodeInvalidArgument, msg: msg}
}

// writeErr writes b's message, code and field. The admin API has always written its
// error keys in sorted order ({"code":…,"error":…,"field":…}), not in the order of
// the broker's body, so it renders them through a map to keep those bytes.
func writeErr(w http.ResponseWriter, status int, b api.ErrorBody) {
	m := map[string]string{"error": b.Error, "code": string(b.Code)}
	if b.Field != "" {
		m["field"] = b.Field
	}
	writeJSON(w, status, m)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body strictly (decodeStrict).
func decode(r *http.Request, v any) error {
	raw, err := readBody(r)
	if err != nil {
		return err
	}
	return decodeStrict(raw, v)
}

// decodeOptional is decode for a body that may be absent (empty, or only white space).
func decodeOptional(r *http.Request, v any) error {
	raw, err := readBody(r)
	if err != nil || len(bytes.TrimSpace(raw)) == 0 {
		return err
	}
	return decodeStrict(raw, v)
}

// decodeChecked is decode after check has looked at the body's members: a check
// names a member's problem before the decoder would (in Go's words).
func decodeChecked(r *http.Request, v any, check func(members map[string]json.RawMessage) error) error {
	raw, err := readBody(r)
	if err != nil {
		return err
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) == nil {
		if err := check(members); err != nil {
			return err
		}
	}
	return decodeStrict(raw, v)
}

// timeMember checks that the member name (in any case, as the decoder matches it)
// is null or an RFC 3339 time: time.Time's own errors name Go's layout.
func timeMember(name string) func(map[string]json.RawMessage) error {
	return func(members map[string]json.RawMessage) error {
		for k, v := range members {
			if !strings.EqualFold(k, name) || string(bytes.TrimSpace(v)) == "null" {
				continue
			}
			var at time.Time // the decoder's own reading of a time
			if at.UnmarshalJSON(v) != nil {
				return &tenant.ValidationError{Field: name, Msg: "must be an RFC 3339 time string (2027-01-01T00:00:00Z)"}
			}
		}
		return nil
	}
}

// bodyError is the 400 of a body the admin API cannot read. A value of the wrong
// type is named by its JSON path (the answer's field) and the JSON type expected,
// as the gateway names it, never by the Go type it did not fit; an unknown member is
// named by its own name.
func bodyError(err error) error {
	if ve, ok := tenant.JSONTypeError(err, ""); ok {
		return ve
	}
	// encoding/json names an unknown member only in its message.
	if rest, ok := strings.CutPrefix(err.Error(), `json: unknown field "`); ok {
		if name, ok := strings.CutSuffix(rest, `"`); ok {
			return &tenant.ValidationError{Field: name, Msg: "unknown field"}
		}
	}
	return badRequest("invalid JSON body: " + err.Error())
}

// actor names who made a change, for the audit log: "admin-token" or
// "user:<name>".
func actor(r *http.Request) string {
	who, _ := r.Context().Value(actorKey{}).(string)
	return who
}
