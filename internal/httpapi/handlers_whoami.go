package httpapi

import (
	"net/http"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/auth"
)

// handleWhoami is GET /api/v1/auth/whoami (read-only): the subject, level and
// expiry the broker resolved for the request's token, so a client learns what it may
// do whatever the role-claim settings. With authentication off it answers
// {"authEnabled":false,"sub":null,"level":"admin","exp":null}. A token without any
// of the configured roles is refused 403, as on every protected route; when the path
// is skip-listed (JWT_SKIP_PATHS) the handler verifies the token itself under the
// same rules, since a skip-listed request carries no principal.
func (s *Server) handleWhoami(w http.ResponseWriter, r *http.Request) error {
	v := s.opts.Verifier
	if v == nil {
		return writeJSON(w, http.StatusOK, api.Whoami{Level: api.LevelAdmin})
	}
	p, ok := auth.FromContext(r.Context())
	if !ok {
		var err error
		if p, err = v.Verify(r.Context(), auth.TokenFromAuthorization(r.Header.Get("Authorization"))); err != nil {
			return err
		}
		if err := p.Require(auth.ReadOnly); err != nil {
			return err
		}
	}
	out := api.Whoami{AuthEnabled: true, Sub: optional(p.Subject), Level: p.Level.String()}
	if !p.ExpiresAt.IsZero() {
		exp := p.ExpiresAt.Unix()
		out.Exp = &exp
	}
	return writeJSON(w, http.StatusOK, out)
}
