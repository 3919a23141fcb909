package gateway

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/queenmq/queen/internal/proxy/tenant"
)

// exchange is one request's progress, for the access log, metrics and metering.
type exchange struct {
	route    *route
	id       string
	tenant   string
	keyID    string
	user     string
	backend  string
	cell     string
	status   int
	bytesIn  int64
	bytesOut int64
	result   string
	// pageUser and pageRole are the signed-in user of a dashboard page request,
	// forwarded as X-Proxy-User and X-Proxy-Role.
	pageUser, pageRole string
}

// serveRoute is the handler of one classified route.
func (s *Server) serveRoute(rt *route) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		x := &exchange{route: rt, id: requestIDOf(r)}
		err := s.admitAndForward(w, r, x)
		var ae *apiError
		var re *redirect
		if errors.As(err, &re) {
			http.Redirect(w, r, re.location, http.StatusFound)
			x.status = http.StatusFound
		} else if errors.As(err, &ae) {
			if rt.body == bodyTransaction {
				writeTxError(w, x.id, s.ids.New(), ae)
			} else {
				writeError(w, x.id, ae)
			}
			x.status = ae.status
			if ae.result != "" {
				x.result = ae.result
			}
		} else if err != nil {
			x.status = http.StatusBadGateway
			s.logger.Debug("request ended", "request_id", x.id, "err", err)
		}
		s.finish(r, x, start)
		if x.status == statusClientClosed {
			// Nothing was answered because the client's side of the connection ended (it
			// left, or closed only its sending half and waits): net/http would send 200
			// with an empty body, which reads as success. Close the connection instead.
			panic(http.ErrAbortHandler)
		}
	}
}

// statusClientClosed is the status logged (never sent) for a request whose client
// went away before it was answered.
const statusClientClosed = 499

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
		slog.String("key_id", x.keyID), slog.String("user", x.user), slog.String("upstream", x.backend), slog.String("cell", x.cell),
		slog.Int64("bytes_in", x.bytesIn), slog.Int64("bytes_out", x.bytesOut))
}

// admitAndForward runs the checks in their order and forwards what passes.
func (s *Server) admitAndForward(w http.ResponseWriter, r *http.Request, x *exchange) error {
	if err := s.checkRequest(r); err != nil {
		return err
	}
	switch x.route.access {
	case accessPublic:
		if s.opts.Sessions != nil && x.route.page {
			// With login on, the dashboard's pages need a session (its files do not);
			// the page learns that it runs behind the proxy, and whose session it is.
			p, err := s.authenticate(r.Context(), r, false)
			if err != nil {
				return toLogin(r)
			}
			x.pageUser, x.pageRole = p.user, p.role
		}
		return s.forward(w, r, x, nil, nil)
	case accessGlobal:
		if !hasCredential(r) {
			return globalForbidden()
		}
	case accessTenant:
	}
	p, err := s.authenticate(r.Context(), r, true)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) {
			x.tenant, x.keyID = ae.tenant, ae.keyID // a refused credential of a known tenant
		}
		if s.opts.Sessions != nil && ae != nil && ae.status == http.StatusUnauthorized && isNavigation(r) {
			return toLogin(r)
		}
		return err
	}
	x.tenant, x.keyID, x.user = p.tenantID(), p.keyID(), p.user
	if x.route.access == accessGlobal && p.tenant != nil {
		return globalForbidden()
	}
	if err := s.authorize(r, x.route, p); err != nil {
		return err
	}
	body, parsed, err := s.readBody(r, x.route, p)
	if err != nil {
		return err
	}
	release, err := s.admit(x, p, parsed)
	if err != nil {
		return err
	}
	defer release()
	return s.forward(w, r, x, p, &requestBody{raw: body, parsed: parsed})
}

func globalForbidden() error {
	return &apiError{status: http.StatusForbidden, code: codeForbidden,
		msg: "this route is not available through the proxy", result: "forbidden"}
}

// checkRequest refuses a client tenancy header, credentials in the query string and
// a query string that does not parse.
func (s *Server) checkRequest(r *http.Request) error {
	if _, sent := r.Header[http.CanonicalHeaderKey(s.opts.TenancyHeader)]; sent {
		return errorf(http.StatusBadRequest, codeForbiddenHeader, "the "+s.opts.TenancyHeader+" header is set by the proxy, not by clients")
	}
	return s.checkQuery(r.URL.RawQuery)
}

// credentialParams are the query parameter names that carry a credential.
var credentialParams = []string{"api_key", "apikey", "key", "token", "access_token"}

// checkQuery refuses credentials anywhere in a raw query string: in every pair split
// at '&' or ';' (a server may split at either), under a credential name or as a value
// (or a name) starting with the API key prefix, each as written and decoded, a bad
// escape notwithstanding. Then it refuses a query string that does not parse: the
// proxy would drop pairs that a broker, or a server before it, might read.
func (s *Server) checkQuery(raw string) error {
	if raw == "" {
		return nil
	}
	for _, pair := range strings.FieldsFunc(raw, func(c rune) bool { return c == '&' || c == ';' }) {
		name, value, _ := strings.Cut(pair, "=")
		leaked, id := false, ""
		for _, n := range queryForms(name) {
			leaked = leaked || slices.Contains(credentialParams, strings.ToLower(n))
		}
		// Every form is looked at, so that a key under a credential name is logged by
		// its id too.
		for _, text := range append(queryForms(name), queryForms(value)...) {
			found, keyID := keyInText(text)
			leaked = leaked || found
			if id == "" {
				id = keyID
			}
		}
		if id != "" {
			s.logger.Warn("API key sent in a query string; refused", "key_id", id)
		}
		if leaked {
			return errorf(http.StatusBadRequest, codeCredentialsInQuery,
				"credentials belong in the Authorization header, never in the query string")
		}
	}
	if _, err := url.ParseQuery(raw); err != nil {
		return errorf(http.StatusBadRequest, codeInvalidArgument,
			"the query string does not parse (a bad %-escape, or ';' between parameters)")
	}
	return nil
}

// keyInText reports whether a query text holds an API key: the text, or one of its
// space-separated words ("Bearer qk_…"), starting with the key prefix; id is the key's
// id when one parses (a key is logged by its id, never its text).
func keyInText(text string) (found bool, id string) {
	for _, w := range append(strings.Fields(text), text) {
		if !strings.HasPrefix(w, tenant.KeyPrefix) {
			continue
		}
		found = true
		if id, ok := tenant.ParseKey(w); ok {
			return true, id
		}
	}
	return found, ""
}

// queryForms is a query text as written and, when that differs, decoded: '+' a
// space, each valid %XX escape its byte, an invalid escape kept as written.
func queryForms(text string) []string {
	if !strings.ContainsAny(text, "%+") {
		return []string{text}
	}
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '+':
			b.WriteByte(' ')
		case c == '%' && i+2 < len(text) && isHex(text[i+1]) && isHex(text[i+2]):
			b.WriteByte(unhex(text[i+1])<<4 | unhex(text[i+2]))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return []string{text, b.String()}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// unauthenticated is the one answer of every refused credential.
func (s *Server) unauthenticated(reason string) *apiError {
	s.metrics.authFailures.WithLabelValues(reason).Inc()
	return &apiError{status: http.StatusUnauthorized, code: codeUnauthenticated, msg: "Authentication required",
		result: "unauthenticated"}
}

// authorize checks the tenant's status, the key's scope and its queue allowlist for
// the path's queue.
func (s *Server) authorize(r *http.Request, rt *route, p *principal) error {
	forbidden := func(msg string) error {
		return &apiError{status: http.StatusForbidden, code: codeForbidden, msg: msg, result: "forbidden"}
	}
	if p.tenant != nil && p.tenant.Status == tenant.StatusSuspended {
		return &apiError{status: http.StatusForbidden, code: codeTenantSuspended, msg: "the tenant is suspended", result: "forbidden"}
	}
	if !p.scope.Allows(rt.scope) {
		return forbidden("this credential's scope (" + string(p.scope) + ") does not allow this route (" + string(rt.scope) + ")")
	}
	switch rt.queues {
	case queuesByID, queuesBody:
		// Id-only routes pass; body names are checked once the body is read.
	case queuesSpan:
		if !p.allQueues() {
			return spanForbidden()
		}
	case queuesPath:
		return checkQueue(p, chi.URLParam(r, "queue"))
	case queuesQuery:
		// Every value: the broker reads the first, and none may slip past the check.
		names := r.URL.Query()["queue"]
		if len(names) == 0 {
			names = []string{""}
		}
		for _, q := range names {
			if err := checkQueue(p, q); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkQueue refuses a queue name the tenancy scoping cannot take (400) or the key's
// allowlist does not admit (403). The ':' rule is a tenant's: an operator works in
// global scope, where a tenant's queues have their stored names ("acme:orders").
func checkQueue(p *principal, q string) error {
	if p.tenant != nil && strings.Contains(q, ":") {
		return errorf(http.StatusBadRequest, codeInvalidArgument, "queue names may not contain ':'")
	}
	if !p.allowsQueue(q) {
		return &apiError{status: http.StatusForbidden, code: codeForbidden,
			msg: "this key may not use queue " + strconv.Quote(q), result: "forbidden"}
	}
	return nil
}

// spanForbidden is the refusal of a key limited to some queues on a route, or a body,
// that spans queues.
func spanForbidden() error {
	return &apiError{status: http.StatusForbidden, code: codeForbidden,
		msg: "a key limited to some queues cannot call a route that spans queues", result: "forbidden"}
}
