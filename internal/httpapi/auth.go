package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/auth"
)

// authenticate enforces the route levels of routeLevels (see docs/security.md). It runs
// before the router and before any body is read, so an unauthenticated request never
// reaches a handler and gets 401 even with a malformed body. With no verifier
// (JWT_ENABLED=false) it is not in the chain at all and the Authorization header is
// never read.
//
// Order: a request that routes nowhere needs the admin level below /api/v1/system and
// /internal, passes through when the dashboard would answer it (a GET or HEAD outside
// the API prefixes), and needs the read-write level when it would get the JSON 404 of
// an absent route, as on a 1.x broker; a skip-listed path or a public route passes
// without a principal; any other request needs a token that verifies (else 401) whose
// roles reach the route's level (else 403). The verified principal travels in the request context.
func (s *Server) authenticate(next http.Handler) http.Handler {
	v := s.opts.Verifier
	if v == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := routingPath(r)
		pattern := s.router.Find(chi.NewRouteContext(), r.Method, path)
		level := auth.ReadWrite // a request that routes nowhere and answers a JSON 404
		switch {
		case pattern != "":
			level = routeLevel(r.Method, pattern)
		case adminPrefixed(path): // routes nowhere, below a prefix whose routes are all admin's
			level = auth.Admin
		case !absentRoute(r.Method, path): // the dashboard's pages and files, public
			next.ServeHTTP(w, r)
			return
		}
		if level == auth.Public || s.skipped(path) {
			next.ServeHTTP(w, r)
			return
		}
		p, err := v.Verify(r.Context(), auth.TokenFromAuthorization(r.Header.Get("Authorization")))
		if err == nil {
			err = p.Require(level)
		}
		if err != nil {
			// The router will not run: record the pattern for the access log and metrics.
			if rctx := chi.RouteContext(r.Context()); rctx != nil {
				rctx.RoutePatterns = append(rctx.RoutePatterns, pattern)
			}
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.NewContext(r.Context(), p)))
	})
}

// absentRoute reports whether a request that routes nowhere gets the JSON 404 of an
// absent route (routeAbsent) rather than the dashboard: as on a 1.x broker, that answer
// is behind the read-write level, so a request without a valid token learns nothing
// of which routes exist.
func absentRoute(method, path string) bool {
	_, ok := api.AbsentRoute(method, path)
	return ok
}

// adminPrefixed reports whether path lies below /api/v1/system or /internal, where every
// route needs the admin level: a path there that routes nowhere needs it too, as on a
// 1.x broker, so that a lesser token learns nothing of which of those routes exist.
func adminPrefixed(path string) bool {
	return api.UnderPrefix(path, "/api/v1/system") || api.UnderPrefix(path, "/internal")
}

// routingPath is the path exactly as chi routes it: the escaped form when the URL
// has one. Skip-list matching uses it too, so a skip entry can never match a request
// that routes somewhere other than what the entry names.
func routingPath(r *http.Request) string {
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	if path == "" {
		path = "/"
	}
	return path
}

// skipped reports whether path is exempt from authentication by JWT_SKIP_PATHS: an
// exact match, or a prefix match for entries that end in "/" and are longer than "/"
// (so the default "/" entry exempts only the root itself).
func (s *Server) skipped(path string) bool {
	for _, e := range s.opts.AuthSkipPaths {
		switch {
		case e == "":
		case path == e:
			return true
		case len(e) > 1 && strings.HasSuffix(e, "/") && strings.HasPrefix(path, e):
			return true
		}
	}
	return false
}

// producerSub is the verified subject of the request's token, stamped as the
// producer of pushed messages; "" (stored as NULL) when the request carried no
// verified token: auth off, or a skip-listed path.
func producerSub(r *http.Request) string {
	if p, ok := auth.FromContext(r.Context()); ok {
		return p.Subject
	}
	return ""
}

// classifyAuth maps the auth package's refusals (a row of the error table): 401 with
// a WWW-Authenticate challenge, 403, or 503 when the JWKS cannot be fetched.
func classifyAuth(ae *auth.Error) (int, api.ErrorBody) {
	switch {
	case errors.Is(ae, auth.ErrForbidden):
		return http.StatusForbidden, api.ErrorBody{Error: ae.Message, Code: api.ErrorCodeForbidden}
	case errors.Is(ae, auth.ErrKeysUnavailable):
		return http.StatusServiceUnavailable, api.ErrorBody{Error: ae.Message, Code: api.ErrorCodeUnavailable}
	}
	return http.StatusUnauthorized, api.ErrorBody{Error: ae.Message, Code: api.ErrorCodeUnauthenticated}
}

// authChallenge is the WWW-Authenticate value for an auth refusal (RFC 6750 §3), ""
// for any other error. It names the error class only, never the token.
func authChallenge(err error) string {
	var ae *auth.Error
	switch {
	case !errors.As(err, &ae):
		return ""
	case errors.Is(ae, auth.ErrForbidden):
		return `Bearer realm="queen", error="insufficient_scope"`
	case errors.Is(ae, auth.ErrUnauthenticated) && ae.Message != auth.MsgAuthRequired:
		return `Bearer realm="queen", error="invalid_token"`
	case errors.Is(ae, auth.ErrUnauthenticated):
		return `Bearer realm="queen"`
	}
	return ""
}
