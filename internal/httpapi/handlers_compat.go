package httpapi

import (
	"net/http"

	"github.com/queenmq/queen/internal/api"
)

// The routes the Queen 1.x clients call beyond the 0.15 API that need no state of
// their own: the JSON liveness of GET /status, the broker's /auth/* answers for a
// dashboard without queen-proxy, and the refusals of the families queen does not
// build (docs/api.md, "Clients" and "Routes not built").

// engineName is the "engine" of GET /status. 1.x brokers name their storage engine
// and its implementation there ("segments-rust"); queen stores everything in
// PostgreSQL tables and is written in Go. Clients read only "status".
const engineName = "postgres-go"

// The ephemeral family's prefix and switch, short names for package api's.
const (
	ephemeralPrefix = api.EphemeralPrefix
	ephemeralSwitch = api.EphemeralSwitch
)

// ephemeralRoutes are the method and path of every route of the ephemeral family,
// registered so that each answers its own 404 (handleEphemeral) at its 1.x level.
var ephemeralRoutes = []struct{ method, pattern string }{
	{http.MethodPost, ephemeralPrefix + "push"},
	{http.MethodGet, ephemeralPrefix + "pop"},
	{http.MethodPost, ephemeralPrefix + "ack"},
	{http.MethodPost, ephemeralPrefix + "configure"},
	{http.MethodPost, ephemeralPrefix + "reset"},
	{http.MethodDelete, ephemeralPrefix + "queue/{queue}"},
	{http.MethodGet, ephemeralPrefix + "queues"},
	{http.MethodGet, ephemeralPrefix + "queues/{queue}/depth"},
	{http.MethodGet, ephemeralSwitch},
	{http.MethodPost, ephemeralSwitch},
}

// migrationRoutes are upstream's migration routes (copying a database into another,
// which queen does by adopting it in place: docs/upgrades.md). They are registered
// so that each answers the no_such_route 404 behind its admin level, as documented,
// rather than to anyone.
var migrationRoutes = []struct{ method, pattern string }{
	{http.MethodPost, "/api/v1/migration/test-connection"},
	{http.MethodPost, "/api/v1/migration/start"},
	{http.MethodGet, "/api/v1/migration/status"},
	{http.MethodPost, "/api/v1/migration/validate"},
	{http.MethodPost, "/api/v1/migration/reset"},
}

// compatRoutes registers GET|HEAD /status, /auth/me|login|logout, the ephemeral
// family and the migration routes.
func (s *Server) compatRoutes() {
	r := s.router
	r.Get("/status", s.handle(s.handleStatusLive))
	r.Head("/status", s.handle(s.handleStatusLive))
	r.Get("/auth/me", s.handle(s.handleAuthMe))
	r.Get("/auth/login", s.handle(s.handleAuthLogin))
	r.Post("/auth/logout", s.handle(s.handleAuthLogout))
	for _, e := range ephemeralRoutes {
		// Without the parameter check: whatever the request carries, a 1.x client must
		// get the 404 it reads as "not supported", not a 400 about a name or parameter.
		r.Method(e.method, e.pattern, s.serve(s.handleEphemeral))
	}
	for _, m := range migrationRoutes {
		r.Method(m.method, m.pattern, s.handle(s.handleMigration))
	}
}

// handleMigration answers every migration route: 404 no_such_route.
func (s *Server) handleMigration(http.ResponseWriter, *http.Request) error {
	return &httpError{status: http.StatusNotFound, code: api.ErrorCodeNoSuchRoute, msg: api.MsgNoSuchRoute}
}

// statusLive is the body of GET /status.
type statusLive struct {
	Status string `json:"status"`
	Engine string `json:"engine"`
}

// handleStatusLive is GET /status: 200 {"status":"ok","engine":"postgres-go"} while
// the process serves HTTP. Like /health/live it never touches the database.
func (s *Server) handleStatusLive(w http.ResponseWriter, _ *http.Request) error {
	return writeJSON(w, http.StatusOK, statusLive{Status: "ok", Engine: engineName})
}

// Identity of the standalone broker, as GET /auth/me answers it with JWT off.
const (
	standaloneTenantID = "00000000-0000-0000-0000-000000000001"
	standaloneSlug     = "local"
	actClusterHeader   = "x-queen-act-cluster"
)

// authCluster is one cluster of the /auth/me identity.
type authCluster struct {
	ID         string `json:"id"`
	Slug       string `json:"slug"`
	Role       string `json:"role"`
	TenantSlug string `json:"tenant_slug"`
	Status     string `json:"status"`
	TenantID   string `json:"tenant_id"`
	CellSlug   string `json:"cell_slug"`
}

// authClusterRef is the acting cluster of the /auth/me identity.
type authClusterRef struct {
	ID   string `json:"id"`
	Slug string `json:"slug"`
}

// authMe is the body of GET /auth/me with JWT off: the fixed identity of a broker
// that runs without queen-proxy, an operator with every right on its one cluster.
type authMe struct {
	UserID           string         `json:"user_id"`
	Email            *string        `json:"email"`
	TenantSlug       string         `json:"tenant_slug"`
	IsOperator       bool           `json:"is_operator"`
	OperatorEnabled  bool           `json:"operator_enabled"`
	OperatorLive     bool           `json:"operator_live"`
	ActingCluster    authClusterRef `json:"acting_cluster"`
	Clusters         []authCluster  `json:"clusters"`
	ActClusterHeader string         `json:"act_cluster_header"`
	Role             string         `json:"role"`
	Cluster          *string        `json:"cluster"`
	Standalone       bool           `json:"standalone"`
}

// handleAuthMe is GET /auth/me (public). JWT off: 200 with the standalone identity,
// whose cell_slug is the broker's instance name. JWT on: 401 auth_required, with or
// without a token; an identity then comes from queen-proxy, or from
// GET /api/v1/auth/whoami for a token.
func (s *Server) handleAuthMe(w http.ResponseWriter, _ *http.Request) error {
	if s.opts.Verifier != nil {
		return &httpError{status: http.StatusUnauthorized, code: api.ErrorCodeAuthRequired, msg: string(api.ErrorCodeAuthRequired)}
	}
	return writeJSON(w, http.StatusOK, authMe{
		UserID: "standalone", TenantSlug: standaloneSlug,
		IsOperator: true, OperatorEnabled: true, OperatorLive: true,
		ActingCluster: authClusterRef{ID: standaloneSlug, Slug: standaloneSlug},
		Clusters: []authCluster{{
			ID: standaloneSlug, Slug: standaloneSlug, Role: "admin", TenantSlug: standaloneSlug,
			Status: "active", TenantID: standaloneTenantID, CellSlug: s.instanceName(),
		}},
		ActClusterHeader: actClusterHeader, Role: "admin", Standalone: true,
	})
}

// instanceName names this broker: its configured instance (QUEEN_INSTANCE, else the
// host name), or "queen" for a server without a broker.
func (s *Server) instanceName() string {
	if s.broker != nil {
		if name := s.broker.Config().Instance; name != "" {
			return name
		}
	}
	return serverName
}

// loginPage is the answer of GET /auth/login with JWT on.
const loginPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Queen: sign in</title></head>
<body><h1>Sign in</h1>
<p>This broker checks tokens (JWT) and has no sign-in page of its own. Sign in through
queen-proxy, or open the dashboard and paste a token in its connect dialog.</p>
<p><a href="/">Open the dashboard</a></p></body></html>
`

// handleAuthLogin is GET /auth/login: with JWT off there is nothing to sign in to, so
// it redirects (302) to the dashboard; with JWT on it answers a small static page
// saying how to sign in.
func (s *Server) handleAuthLogin(w http.ResponseWriter, r *http.Request) error {
	if s.opts.Verifier == nil {
		http.Redirect(w, r, "/", http.StatusFound)
		return nil
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(loginPage))
	return nil
}

// handleAuthLogout is POST /auth/logout: 200 {"ok":true}. The broker keeps no session
// (a token is the client's own), so there is nothing to end.
func (s *Server) handleAuthLogout(w http.ResponseWriter, _ *http.Request) error {
	return writeJSON(w, http.StatusOK, struct {
		OK bool `json:"ok"`
	}{OK: true})
}

// handleEphemeral answers every route of the ephemeral family: 404
// ephemeral_unsupported, which 1.x clients report as "broker does not support
// ephemeral queues" without retrying (a 5xx would be retried and fail the broker over).
func (s *Server) handleEphemeral(http.ResponseWriter, *http.Request) error {
	return ephemeralUnsupported()
}

func ephemeralUnsupported() error {
	return &httpError{status: http.StatusNotFound, code: api.ErrorCodeEphemeralUnsupported, msg: api.MsgEphemeralUnsupported}
}
