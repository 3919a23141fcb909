package gateway

import (
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/session"
	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// sessionCookie is the cookie that carries a session token, as 0.15 named it.
const sessionCookie = "token"

// maxLoginBody bounds a login request's body.
const maxLoginBody = 16 << 10

//go:embed loginpage/login.html loginpage/login.css
var loginFiles embed.FS

var loginPage = template.Must(template.ParseFS(loginFiles, "loginpage/login.html"))

// loginCSP allows the page its own stylesheet and form target, and nothing else: no
// script at all.
const loginCSP = "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// redirect is an answer that sends the client elsewhere (302).
type redirect struct{ location string }

func (r *redirect) Error() string { return "redirect to " + r.location }

// toLogin sends a browser to the login page, to come back to where it was.
func toLogin(r *http.Request) error {
	return &redirect{location: "/login?redirect_uri=" + url.QueryEscape(r.URL.RequestURI())}
}

// isNavigation reports a browser loading a page (not a script's API call).
func isNavigation(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	if m := r.Header.Get("Sec-Fetch-Mode"); m != "" {
		return m == "navigate"
	}
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

// localPath reports a redirect target on this host: a path, not "//host" or "/\host".
func localPath(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") {
		return false
	}
	for _, c := range p {
		if c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	u, err := url.Parse(p)
	return err == nil && u.Scheme == "" && u.Host == ""
}

// loginRoutes mounts the login routes on r's handler table.
func (s *Server) loginRoutes(handle func(method, pattern string, h http.HandlerFunc)) {
	handle(http.MethodGet, "/api/auth/config", s.handleAuthConfig)
	handle(http.MethodGet, "/api/auth/google", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "Google auth is not configured"})
	})
	handle(http.MethodGet, "/api/me", s.handleMe)
	if s.opts.Sessions == nil {
		return
	}
	handle(http.MethodGet, "/login", s.handleLoginPage)
	handle(http.MethodGet, "/login/login.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		http.ServeFileFS(w, r, loginFiles, "loginpage/login.css")
	})
	handle(http.MethodPost, "/api/login", s.handleLogin)
	handle(http.MethodPost, "/api/logout", s.handleLogout)
}

func (s *Server) handleAuthConfig(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"password":    map[string]bool{"enabled": s.opts.Sessions != nil},
		"google":      map[string]any{"enabled": false, "clientId": nil},
		"forwardAuth": map[string]any{"enabled": false, "loginUrl": nil},
		"apiKeys":     map[string]bool{"enabled": true},
	})
}

type loginView struct {
	Error, Username, RedirectURI string
}

func (s *Server) renderLogin(w http.ResponseWriter, status int, v loginView) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", loginCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = loginPage.Execute(w, v)
}

func (s *Server) handleLoginPage(w http.ResponseWriter, r *http.Request) {
	next := r.URL.Query().Get("redirect_uri")
	if !localPath(next) {
		next = "/"
	}
	s.renderLogin(w, http.StatusOK, loginView{RedirectURI: next})
}

// loginRequest is POST /api/login's body (JSON, or the login page's form).
type loginRequest struct {
	Username    string `json:"username"`
	Password    string `json:"password"`
	RedirectURI string `json:"redirect_uri"`
}

func readLogin(r *http.Request) (loginRequest, bool, error) {
	var req loginRequest
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	body := http.MaxBytesReader(nil, r.Body, maxLoginBody)
	if ct == "application/x-www-form-urlencoded" {
		raw, err := io.ReadAll(body)
		if err != nil {
			return req, true, &tenant.ValidationError{Field: "body", Msg: "too large or unreadable"}
		}
		form, err := url.ParseQuery(string(raw))
		if err != nil {
			return req, true, &tenant.ValidationError{Field: "body", Msg: "not a form"}
		}
		req = loginRequest{Username: form.Get("username"), Password: form.Get("password"), RedirectURI: form.Get("redirect_uri")}
		return req, true, nil
	}
	if err := json.NewDecoder(body).Decode(&req); err != nil {
		return req, false, &tenant.ValidationError{Field: "body", Msg: "must be a JSON object {\"username\",\"password\"}"}
	}
	return req, false, nil
}

func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	req, form, err := readLogin(r)
	fail := func(status int, code api.ErrorCode, field, msg string, retry time.Duration) {
		if form && status != http.StatusForbidden {
			if retry > 0 {
				w.Header().Set("Retry-After", strconv.FormatInt(int64(max(1, (retry+time.Second-1)/time.Second)), 10))
			}
			s.renderLogin(w, status, loginView{Error: msg, Username: req.Username, RedirectURI: req.RedirectURI})
			return
		}
		e := &apiError{status: status, code: code, msg: msg, retryAfter: retry, field: field}
		writeError(w, requestIDOf(r), e)
	}
	var ve *tenant.ValidationError
	switch {
	case errors.As(err, &ve):
		fail(http.StatusBadRequest, codeInvalidArgument, ve.Field, ve.Error(), 0)
		return
	case !sameOrigin(r):
		fail(http.StatusForbidden, codeForbidden, "", "logins are accepted from the proxy's own pages only", 0)
		return
	case req.Username == "":
		fail(http.StatusBadRequest, codeInvalidArgument, "username", "username is required", 0)
		return
	case req.Password == "":
		fail(http.StatusBadRequest, codeInvalidArgument, "password", "password is required", 0)
		return
	}
	next := "/"
	if req.RedirectURI != "" {
		if !localPath(req.RedirectURI) {
			fail(http.StatusBadRequest, codeInvalidArgument, "redirect_uri", "redirect_uri must be a path on this host (/x, not //x)", 0)
			return
		}
		next = req.RedirectURI
	}
	ip := s.clientIP(r)
	if blocked, wait := s.opts.Lockout.Blocked(req.Username, ip); blocked {
		s.metrics.authFailures.WithLabelValues("login_locked").Inc()
		fail(http.StatusTooManyRequests, codeRateLimited, "", "too many failed logins; try again later", wait)
		return
	}
	var cred *store.UserCredential
	var lookupErr error
	// A name no user can have (users are created with tenant.ValidateUsername) is not
	// looked up: the database refuses some such names (a NUL) with an error, which is
	// not the database being unavailable.
	if tenant.ValidateUsername(req.Username) == nil {
		cred, lookupErr = s.opts.Store.UserLookup(r.Context(), req.Username)
	}
	if lookupErr != nil && !errors.Is(lookupErr, tenant.ErrNotFound) {
		s.logger.Warn("user lookup failed", "err", lookupErr)
		fail(http.StatusServiceUnavailable, codeUnavailable, "", "authentication is unavailable", time.Second)
		return
	}
	hash := ""
	if cred != nil {
		hash = cred.PasswordHash
	}
	ok := session.CheckPassword(hash, req.Password) && cred != nil &&
		(cred.Tenant == nil || cred.Tenant.Status != tenant.StatusDeleted)
	if ok {
		_, roleErr := tenant.RoleScope(cred.User.Role)
		ok = roleErr == nil
	}
	if !ok {
		s.opts.Lockout.Fail(req.Username, ip)
		s.metrics.authFailures.WithLabelValues("bad_login").Inc()
		// The name is logged only when such a user exists: a name that matches no user
		// may be a password typed into the wrong field, or a pasted key.
		if cred != nil {
			s.logger.Info("login refused", "user", cred.User.Username, "client", ip)
		} else {
			s.logger.Info("login refused", "user_exists", false, "client", ip)
		}
		fail(http.StatusUnauthorized, codeUnauthenticated, "", "Invalid credentials", 0)
		return
	}
	s.opts.Lockout.Succeed(req.Username)
	token, err := s.startSession(r, cred)
	if err != nil {
		s.logger.Warn("session create failed", "err", err)
		fail(http.StatusServiceUnavailable, codeUnavailable, "", "authentication is unavailable", time.Second)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: token, Path: "/", HttpOnly: true, Secure: s.opts.TLS,
		SameSite: http.SameSiteLaxMode, MaxAge: int(s.opts.Sessions.TTL().Seconds())})
	s.logger.Info("login", "user", req.Username, "tenant", cred.User.TenantID(), "client", ip)
	if form {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true,
		"user": map[string]string{"username": cred.User.Username, "role": cred.User.Role}, "redirect_uri": next})
}

// startSession stores a new session of the user and returns its token.
func (s *Server) startSession(r *http.Request, cred *store.UserCredential) (string, error) {
	token, c := s.opts.Sessions.Sign(session.Claims{ID: session.NewID(), Subject: cred.User.Username,
		Role: cred.User.Role, Tenant: cred.User.TenantID()})
	if err := s.opts.Store.SessionCreate(r.Context(), c.ID, cred.User.ID, time.Unix(c.ExpiresAt, 0)); err != nil {
		return "", err
	}
	return token, nil
}

func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	tok, cookie, _ := credential(r)
	if cookie && !cookieFromOwnPages(r) {
		writeError(w, requestIDOf(r), cookieForbidden())
		return
	}
	if c, err := s.opts.Sessions.Verify(tok); err == nil {
		if err := s.opts.Store.SessionDelete(r.Context(), c.ID); err != nil {
			s.logger.Warn("session delete failed", "err", err)
			writeError(w, requestIDOf(r), authUnavailable())
			return
		}
		s.opts.Keys.ForgetSession(c.ID)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, Secure: s.opts.TLS,
		SameSite: http.SameSiteLaxMode, MaxAge: -1})
	writeJSON(w, http.StatusOK, map[string]bool{"success": true})
}

// meView is GET /api/me's answer.
type meView struct {
	Username string         `json:"username"`
	Role     string         `json:"role"`
	Kind     string         `json:"kind"`
	Tenant   *string        `json:"tenant"`
	KeyID    string         `json:"keyId,omitempty"`
	Scope    tenant.Scope   `json:"scope,omitempty"`
	Limits   *tenant.Limits `json:"limits,omitempty"`
	Quotas   *tenant.Quotas `json:"quotas,omitempty"`
	Usage    *Stored        `json:"usage,omitempty"`
}

// handleMe answers who the credential is. It changes nothing and a page of another
// origin cannot read its answer (the proxy's CORS never allows credentials), so a
// session cookie needs only sameOrigin here: a cookie sent by a client that is not a
// browser works, one a browser sent from another site does not.
func (s *Server) handleMe(w http.ResponseWriter, r *http.Request) {
	p, err := s.authenticate(r.Context(), r, false)
	if err == nil && p.cookie && !sameOrigin(r) {
		err = cookieForbidden()
	}
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) {
			writeError(w, requestIDOf(r), ae)
		}
		return
	}
	v := meView{Username: p.user, Role: p.role, Kind: "user"}
	if p.tenant != nil {
		id := p.tenant.ID
		v.Tenant = &id
	}
	if p.key != nil {
		u := s.Stored(p.tenant.ID)
		v.Username, v.Role, v.Kind, v.KeyID, v.Scope = p.key.Name, s.opts.Roles[p.scope], "apikey", p.key.ID, p.scope
		if v.Username == "" {
			v.Username = p.key.ID
		}
		v.Limits, v.Quotas, v.Usage = &p.tenant.Limits, &p.tenant.Quotas, u
	}
	writeJSON(w, http.StatusOK, v)
}

// clientIP is the address a request came from: the peer, or, from a trusted proxy,
// the last address of the X-Forwarded-For chain (every line of the header, in order)
// that no trusted proxy added. The walk from the right stops at a hop that is not an
// address: what stands left of it was written by anyone.
func (s *Server) clientIP(r *http.Request) string {
	host := peerHost(r)
	if !s.trusted(host) {
		return host
	}
	hops := forwardedFor(r)
	for i := len(hops) - 1; i >= 0; i-- {
		ip, ok := hopAddr(hops[i])
		if !ok {
			break
		}
		if !s.trustedAddr(ip) {
			return ip.String()
		}
		host = ip.String()
	}
	return host
}

// peerHost is the host of the request's peer address.
func peerHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// forwardedFor is the request's X-Forwarded-For chain: the hops of every line of the
// header, in order (a proxy may add a line of its own instead of extending the
// client's), each trimmed. Empty lines add nothing.
func forwardedFor(r *http.Request) []string {
	var hops []string
	for _, line := range r.Header.Values("X-Forwarded-For") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		for h := range strings.SplitSeq(line, ",") {
			hops = append(hops, strings.TrimSpace(h))
		}
	}
	return hops
}

// hopAddr reads one X-Forwarded-For hop: an IP address, with a port for the proxies
// that add one ("192.0.2.1:4711", "[2001:db8::1]:4711"); an IPv4-mapped IPv6 address
// is its IPv4 address.
func hopAddr(h string) (netip.Addr, bool) {
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(h); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}
