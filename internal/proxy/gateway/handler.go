package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// exchange is one request's progress, for the access log, metrics and metering.
type exchange struct {
	route    *route
	id       string
	tenant   string
	keyID    string
	upstream string
	status   int
	bytesIn  int64
	bytesOut int64
	result   string
}

// serveRoute is the handler of one classified route.
func (s *Server) serveRoute(rt *route) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		x := &exchange{route: rt, id: requestIDOf(r)}
		err := s.admitAndForward(w, r, x)
		var ae *apiError
		if errors.As(err, &ae) {
			writeError(w, x.id, ae)
			x.status = ae.status
			if ae.result != "" {
				x.result = ae.result
			}
		} else if err != nil {
			x.status = http.StatusBadGateway
			s.logger.Debug("request ended", "request_id", x.id, "err", err)
		}
		s.finish(r, x, start)
	}
}

func (s *Server) finish(r *http.Request, x *exchange, start time.Time) {
	d := time.Since(start)
	code := strconv.Itoa(x.status)
	s.metrics.requests.WithLabelValues(x.route.pattern, code).Inc()
	s.metrics.duration.WithLabelValues(x.route.pattern).Observe(d.Seconds())
	if x.tenant != "" && x.result != "" {
		s.metrics.tenantRequests.WithLabelValues(x.tenant, x.result).Inc()
	}
	s.logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
		slog.String("request_id", x.id), slog.String("method", r.Method), slog.String("route", x.route.pattern),
		slog.Int("status", x.status), slog.Duration("duration", d), slog.String("tenant", x.tenant),
		slog.String("key_id", x.keyID), slog.String("upstream", x.upstream),
		slog.Int64("bytes_in", x.bytesIn), slog.Int64("bytes_out", x.bytesOut))
}

// admitAndForward runs the checks in their order and forwards what passes.
func (s *Server) admitAndForward(w http.ResponseWriter, r *http.Request, x *exchange) error {
	if err := s.checkRequest(r); err != nil {
		return err
	}
	switch x.route.access {
	case accessGlobal:
		return &apiError{status: http.StatusForbidden, code: codeForbidden,
			msg: "this route is not available through the proxy", result: "forbidden"}
	case accessPublic:
		return s.forward(w, r, x, nil, nil)
	case accessTenant:
	}
	cred, err := s.authenticate(r.Context(), r)
	if err != nil {
		return err
	}
	x.tenant, x.keyID = cred.Tenant.ID, cred.Key.ID
	if err := s.authorize(r, x.route, cred); err != nil {
		return err
	}
	body, parsed, err := s.readBody(r, x.route, cred)
	if err != nil {
		return err
	}
	release, err := s.admit(x, cred, parsed)
	if err != nil {
		return err
	}
	defer release()
	return s.forward(w, r, x, cred, &requestBody{raw: body, parsed: parsed})
}

// checkRequest refuses credentials in the query string and a client tenancy header.
func (s *Server) checkRequest(r *http.Request) error {
	if _, sent := r.Header[http.CanonicalHeaderKey(s.opts.TenancyHeader)]; sent {
		return errorf(http.StatusBadRequest, codeForbiddenHeader, "the "+s.opts.TenancyHeader+" header is set by the proxy, not by clients")
	}
	for name, values := range r.URL.Query() {
		leaked := false
		switch strings.ToLower(name) {
		case "api_key", "apikey", "key", "token", "access_token":
			leaked = true
		}
		for _, v := range values {
			if strings.HasPrefix(v, tenant.KeyPrefix) {
				leaked = true
				if id, ok := tenant.ParseKey(v); ok {
					s.logger.Warn("API key sent in a query string; refused", "key_id", id, "param", name)
				}
			}
		}
		if leaked {
			return errorf(http.StatusBadRequest, codeCredentialsInQuery,
				"credentials belong in the Authorization header, never in the query string")
		}
	}
	return nil
}

// unauthenticated is the one answer of every refused credential.
func (s *Server) unauthenticated(reason string) error {
	s.metrics.authFailures.WithLabelValues(reason).Inc()
	return &apiError{status: http.StatusUnauthorized, code: codeUnauthenticated, msg: "Authentication required",
		result: "unauthenticated"}
}

// authenticate returns the request's API key credential.
func (s *Server) authenticate(ctx context.Context, r *http.Request) (*store.Credential, error) {
	token := ""
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, rest, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "bearer") {
			return nil, s.unauthenticated("malformed")
		}
		token = strings.TrimSpace(rest)
	} else if c, err := r.Cookie("token"); err == nil {
		token = c.Value
	}
	if token == "" {
		return nil, s.unauthenticated("missing")
	}
	id, ok := tenant.ParseKey(token)
	if !ok {
		// Session tokens are not accepted yet; anything else is malformed.
		return nil, s.unauthenticated("malformed")
	}
	cred, err := s.opts.Keys.Lookup(ctx, id)
	switch {
	case errors.Is(err, tenant.ErrNotFound):
		tenant.HashMatches(token, nil)
		return nil, s.unauthenticated("unknown_key")
	case err != nil:
		s.logger.Warn("key lookup failed", "key_id", id, "err", err)
		return nil, &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
			msg: "authentication is unavailable", retryAfter: time.Second}
	}
	if !tenant.HashMatches(token, cred.Hash) {
		return nil, s.unauthenticated("bad_secret")
	}
	if !cred.Key.UsableAt(s.opts.Now()) {
		return nil, s.unauthenticated("revoked_or_expired")
	}
	if cred.Tenant.Status == tenant.StatusDeleted {
		return nil, s.unauthenticated("tenant_deleted")
	}
	s.opts.Keys.MarkUsed(id)
	return cred, nil
}

// authorize checks the tenant's status, the key's scope and its queue allowlist for
// the path's queue.
func (s *Server) authorize(r *http.Request, rt *route, cred *store.Credential) error {
	forbidden := func(msg string) error {
		return &apiError{status: http.StatusForbidden, code: codeForbidden, msg: msg, result: "forbidden"}
	}
	if cred.Tenant.Status == tenant.StatusSuspended {
		return &apiError{status: http.StatusForbidden, code: codeTenantSuspended, msg: "the tenant is suspended", result: "forbidden"}
	}
	if !cred.Key.Scope.Allows(rt.scope) {
		return forbidden("this key's scope (" + string(cred.Key.Scope) + ") does not allow this route (" + string(rt.scope) + ")")
	}
	switch rt.queues {
	case queuesByID, queuesBody:
		// Id-only routes pass; body names are checked once the body is read.
	case queuesSpan:
		if !cred.Key.AllQueues() {
			return forbidden("a key limited to some queues cannot call a route that spans queues")
		}
	case queuesPath:
		q := chi.URLParam(r, "queue")
		if strings.Contains(q, ":") {
			return errorf(http.StatusBadRequest, codeInvalidArgument, "queue names may not contain ':'")
		}
		if !cred.Key.AllowsQueue(q) {
			return forbidden("this key may not use queue " + strconv.Quote(q))
		}
	}
	return nil
}
