package httpapi

import (
	"net/http"
	"slices"

	"github.com/queenmq/queen/internal/api"
)

// crossOrigin refuses, 403, a browser's request that changes something (any method
// but GET, HEAD and OPTIONS) sent by a page of another origin, unless
// CORSAllowedOrigins allows that origin ("*" allows every one). The broker reads a
// JSON body whatever its Content-Type, so without this a page on any site could post
// a text/plain "simple request", which needs no preflight, to a broker the browser
// reaches (loopback, a private network), with authentication off, or on a path
// JWT_SKIP_PATHS opens. Browsers say where a request comes from (Sec-Fetch-Site,
// else Origin against Host); clients that are not browsers send neither and pass.
// net/http's CrossOriginProtection makes the decision.
func (s *Server) crossOrigin(next http.Handler) http.Handler {
	if slices.Contains(s.opts.CORSAllowedOrigins, "*") {
		return next
	}
	p := http.NewCrossOriginProtection()
	for _, o := range s.opts.CORSAllowedOrigins {
		if err := p.AddTrustedOrigin(o); err != nil {
			// The settings check every origin at boot (envvalue.CheckOrigin); one that
			// still fails here is trusted by no browser request either.
			s.logger.Warn("a CORS origin cannot be trusted for cross-origin requests", "origin", o, "err", err)
		}
	}
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, &httpError{status: http.StatusForbidden, code: api.ErrorCodeForbidden,
			msg: "cross-origin request refused: a page of another origin may not change anything here " +
				"unless CORS_ALLOWED_ORIGINS allows its origin"})
	}))
	return p.Handler(next)
}
