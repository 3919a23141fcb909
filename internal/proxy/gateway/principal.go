package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/proxy/session"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// principal is who a request acts for: a tenant's API key, a tenant user's session
// or an operator's session (no tenant: forwarded in global scope).
type principal struct {
	// tenant is nil for an operator.
	tenant *tenant.Tenant
	scope  tenant.Scope
	// key is the API key; nil for a session.
	key *tenant.Key
	// user and sessionID name a session's user and its jti.
	user, sessionID string
	// role is a session user's role.
	role string
	// cookie says the credential came as the token cookie.
	cookie bool
}

func (p *principal) tenantID() string {
	if p == nil || p.tenant == nil {
		return ""
	}
	return p.tenant.ID
}

func (p *principal) keyID() string {
	if p == nil || p.key == nil {
		return ""
	}
	return p.key.ID
}

func (p *principal) allowsQueue(q string) bool { return p.key == nil || p.key.AllowsQueue(q) }

func (p *principal) allQueues() bool { return p.key == nil || p.key.AllQueues() }

// subject is the broker token's sub: "<tenant>/<key id>", "<tenant>/user:<name>" or,
// for an operator, "user:<name>".
func (p *principal) subject() string {
	switch {
	case p.key != nil:
		return p.tenant.ID + "/" + p.key.ID
	case p.tenant != nil:
		return p.tenant.ID + "/user:" + p.user
	}
	return "user:" + p.user
}

// credential returns the request's credential: the Authorization bearer value, else
// the token cookie (cookie true). Two Authorization headers are malformed: which one
// counts would be a guess.
func credential(r *http.Request) (token string, cookie bool, malformed bool) {
	if len(r.Header.Values("Authorization")) > 1 {
		return "", false, true
	}
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, rest, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "bearer") {
			return "", false, true
		}
		return strings.TrimSpace(rest), false, false
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		return c.Value, true, false
	}
	return "", false, false
}

// hasCredential reports whether the request carries any credential at all.
func hasCredential(r *http.Request) bool {
	tok, _, malformed := credential(r)
	return tok != "" || malformed
}

// authenticate returns the request's principal. api marks an API call, for which a
// cookie credential must come from the proxy's own origin.
func (s *Server) authenticate(ctx context.Context, r *http.Request, api bool) (*principal, error) {
	token, cookie, malformed := credential(r)
	switch {
	case malformed:
		return nil, s.unauthenticated("malformed")
	case token == "":
		return nil, s.unauthenticated("missing")
	}
	if cookie && api && !cookieFromOwnPages(r) {
		return nil, cookieForbidden()
	}
	var p *principal
	var err error
	switch {
	case strings.HasPrefix(token, tenant.KeyPrefix):
		p, err = s.keyPrincipal(ctx, token, s.clientIP(r))
	case s.opts.Sessions != nil && session.LooksLikeToken(token):
		p, err = s.sessionPrincipal(ctx, token)
	default:
		return nil, s.unauthenticated("malformed")
	}
	if p != nil {
		p.cookie = cookie
	}
	return p, err
}

// keyPrincipal checks an API key presented from the client address ip. Malformed
// keys, unknown ids and wrong secrets count against the address: once it has
// session.MaxKeyFailures of them within session.Window, its keys get 429 before any
// lookup until the oldest leaves the window. Revoked and expired keys, and keys of a
// deleted tenant, are genuine credentials and do not count.
func (s *Server) keyPrincipal(ctx context.Context, token, ip string) (*principal, error) {
	if blocked, wait := s.opts.KeyFailures.Blocked(ip); blocked {
		s.metrics.authFailures.WithLabelValues("key_locked").Inc()
		return nil, &apiError{status: http.StatusTooManyRequests, code: codeRateLimited,
			msg: "too many unknown API keys from this address; try again later", retryAfter: wait}
	}
	id, ok := tenant.ParseKey(token)
	if !ok {
		return nil, s.keyFailed(ip, "", "malformed")
	}
	cred, err := s.opts.Keys.Lookup(ctx, id)
	switch {
	case errors.Is(err, tenant.ErrNotFound):
		tenant.HashMatches(token, nil)
		return nil, s.keyFailed(ip, id, "unknown_key")
	case err != nil:
		s.logger.Warn("key lookup failed", "key_id", id, "err", err)
		return nil, authUnavailable()
	}
	if !tenant.HashMatches(token, cred.Hash) {
		return nil, s.keyFailed(ip, id, "bad_secret")
	}
	// A revoked or expired key, or a key of a deleted tenant, is the tenant's own
	// (its secret matched): its refusal counts for the tenant.
	if !cred.Key.UsableAt(s.opts.Now()) {
		return nil, s.unauthenticated("revoked_or_expired").of(cred.Tenant.ID, id)
	}
	if cred.Tenant.Status == tenant.StatusDeleted {
		return nil, s.unauthenticated("tenant_deleted").of(cred.Tenant.ID, id)
	}
	s.opts.Keys.MarkUsed(id)
	return &principal{tenant: cred.Tenant, scope: cred.Key.Scope, key: cred.Key}, nil
}

// keyFailed counts a refused key against the client address and returns the 401.
func (s *Server) keyFailed(ip, id, reason string) error {
	s.opts.KeyFailures.Fail(ip)
	s.logger.Info("API key refused", "reason", reason, "key_id", id, "client", ip)
	return s.unauthenticated(reason)
}

// sessionPrincipal checks a session token: its signature and expiry, then its
// session row (logout deletes it).
func (s *Server) sessionPrincipal(ctx context.Context, token string) (*principal, error) {
	c, err := s.opts.Sessions.Verify(token)
	if err != nil {
		return nil, s.unauthenticated("bad_session")
	}
	ses, err := s.opts.Keys.LookupSession(ctx, c.ID)
	switch {
	case errors.Is(err, tenant.ErrNotFound):
		return nil, s.unauthenticated("session_ended")
	case err != nil:
		s.logger.Warn("session lookup failed", "err", err)
		return nil, authUnavailable()
	}
	if ses.User.Username != c.Subject {
		return nil, s.unauthenticated("bad_session")
	}
	if ses.Tenant != nil && ses.Tenant.Status == tenant.StatusDeleted {
		return nil, s.unauthenticated("tenant_deleted").of(ses.Tenant.ID, "")
	}
	scope, err := tenant.RoleScope(ses.User.Role)
	if err != nil {
		// A 0.15 row with a role of its own: it grants nothing.
		return nil, s.unauthenticated("unknown_role")
	}
	return &principal{tenant: ses.Tenant, scope: scope, user: ses.User.Username, sessionID: ses.ID, role: ses.User.Role}, nil
}

func authUnavailable() *apiError {
	return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
		msg: "authentication is unavailable", retryAfter: time.Second}
}

// sameOrigin reports whether a browser request comes from the proxy's own pages:
// Sec-Fetch-Site same-origin or none (typed, bookmarked), and an Origin, when sent,
// of this host. Requests without either header (not from a browser) pass: a login
// from a script, GET /api/me. A cookie credential needs more (cookieFromOwnPages).
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return false
		}
	}
	return true
}

// cookieFromOwnPages reports whether a request whose credential is the session
// cookie comes from the proxy's own pages: sameOrigin, and Sec-Fetch-Site
// same-origin or none, or an Origin (then of this host). A request with neither
// header is refused: the cookie rides along on whatever a browser sends, and only
// those headers say where a request comes from. Bearer credentials never need them.
func cookieFromOwnPages(r *http.Request) bool {
	return sameOrigin(r) && (r.Header.Get("Sec-Fetch-Site") != "" || r.Header.Get("Origin") != "")
}

// cookieForbidden is the answer to a cookie credential that did not come from the
// proxy's own pages.
func cookieForbidden() *apiError {
	return &apiError{status: http.StatusForbidden, code: codeForbidden,
		msg: "cookie credentials are accepted from the proxy's own pages only", result: "forbidden"}
}

// AdminOperator reports whether the request carries the session of an operator
// with role admin, and names the user: the admin API's second way in.
func (s *Server) AdminOperator(r *http.Request) (string, bool) {
	if s.opts.Sessions == nil {
		return "", false
	}
	tok, _, _ := credential(r)
	if tok == "" || !session.LooksLikeToken(tok) {
		return "", false
	}
	p, err := s.authenticate(r.Context(), r, true)
	if err != nil || p.tenant != nil || p.key != nil || p.role != tenant.RoleAdmin {
		return "", false
	}
	return p.user, true
}
