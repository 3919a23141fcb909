package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/auth"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/tenantid"
)

// tenantRule is what a tenant request may do on a route (the rows of tenantScope).
type tenantRule int

const (
	// tenantPending is a route not scoped yet: refused (403) to tenant requests. It is
	// the zero value, so a route without a row is never served unscoped to a tenant.
	tenantPending tenantRule = iota
	// tenantScoped serves tenant requests inside the tenant's names.
	tenantScoped
	// tenantIgnored serves every request alike; the tenancy header is not read.
	tenantIgnored
	// tenantGlobal is cluster-wide: refused (403) to tenant requests.
	tenantGlobal
)

// TenantSeparator joins a tenant id and a relative queue name into the stored name.
const TenantSeparator = queue.TenantSeparator

type tenantKey struct{}

// tenantFrom is the request's tenant, "" for a global request.
func tenantFrom(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey{}).(string)
	return t
}

// scopeOf is the request's scope: its tenant's queues, or every queue.
func scopeOf(r *http.Request) queue.Scope { return queue.Scope{Tenant: tenantFrom(r.Context())} }

// tenancy resolves the tenant of every routed request and refuses tenant requests on
// routes that are not tenantScoped. It runs after authenticate, so the verified
// token's queen_tenant claim is known: with JWT on the claim decides, a header that
// contradicts it is 403, and a header without a claim is 403 unless the token is
// admin (an operator viewing one tenant). With JWT off the header is trusted as is.
// A repeated, empty or malformed header is 400. Without QUEEN_TENANCY_HEADER it is
// not in the chain.
func (s *Server) tenancy(next http.Handler) http.Handler {
	header := http.CanonicalHeaderKey(s.opts.TenancyHeader)
	if header == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pattern := s.router.Find(chi.NewRouteContext(), r.Method, routingPath(r))
		rule := tenantScope[r.Method+" "+pattern]
		if pattern == "" || rule == tenantIgnored {
			next.ServeHTTP(w, r)
			return
		}
		tenant, err := s.requestTenant(r, header)
		if err == nil && tenant != "" && rule != tenantScoped {
			err = &httpError{status: http.StatusForbidden, code: api.ErrorCodeForbidden,
				msg: "this route is not available to tenants"}
		}
		if err != nil {
			if rctx := chi.RouteContext(r.Context()); rctx != nil {
				rctx.RoutePatterns = append(rctx.RoutePatterns, pattern)
			}
			s.writeError(w, r, err)
			return
		}
		if tenant == "" {
			next.ServeHTTP(w, r)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant))
		// A fenced tenant (being moved to another cell) is answered 503 here, before
		// anything touches the database; the others are counted in flight, so that a
		// fence can wait for them (handlers_tenancy_fence.go).
		s.fenceGuard(w, r, tenant, pattern, next)
	})
}

// requestTenant is the tenant a request names, "" for a global request.
func (s *Server) requestTenant(r *http.Request, header string) (string, error) {
	values := r.Header.Values(header)
	fromHeader := ""
	switch len(values) {
	case 0:
	case 1:
		var ok bool
		if fromHeader, ok = requestTenantID(values[0]); !ok {
			// The 1.x brokers' words first ("invalid x-queen-tenant header (must be a
			// UUID)"), which 1.x clients may look for, then what queen also takes.
			return "", queue.Invalid(header, "invalid %s header (must be a UUID, or one tenant id: %s)",
				strings.ToLower(header), tenantid.Grammar)
		}
	default:
		return "", queue.Invalid(header, "%s must be given once", header)
	}
	if s.opts.Verifier == nil {
		return fromHeader, nil
	}
	p, _ := auth.FromContext(r.Context())
	var claimed string // the claim read as the header is: a tenant id, or a UUID lowercased
	if p != nil && p.HasTenant {
		var ok bool
		if claimed, ok = requestTenantID(p.Tenant); !ok || claimed == "" {
			return "", tenantForbidden("the token's " + auth.TenantClaim + " claim is not a tenant id")
		}
	}
	switch {
	case claimed != "" && fromHeader != "" && fromHeader != claimed:
		return "", tenantForbidden("the " + header + " header contradicts the token's tenant")
	case claimed != "":
		return claimed, nil
	case fromHeader == "":
		return "", nil
	case p != nil && p.Level >= auth.Admin:
		return fromHeader, nil
	}
	return "", tenantForbidden("a tenant header needs a token for that tenant, or an admin token")
}

func tenantForbidden(msg string) error {
	return &httpError{status: http.StatusForbidden, code: api.ErrorCodeForbidden, msg: msg}
}

// isTenantID reports whether id is a well-formed, unreserved tenant id: the grammar
// queen-proxy creates tenants with.
func isTenantID(id string) bool { return tenantid.Valid(id) }

// defaultTenant1x is the tenant Queen 1.x brokers serve requests without a tenant
// header to; here that is the global scope.
const defaultTenant1x = "00000000-0000-0000-0000-000000000001"

// requestTenantID reads a tenant header value: a tenant id (queen-proxy's grammar), or
// a UUID in canonical 8-4-4-4-12 form, which Queen 1.x clients send, lowercased. The
// 1.x default tenant's UUID is the global scope (""). ok is false for anything else.
func requestTenantID(v string) (tenant string, ok bool) {
	if isTenantID(v) {
		return v, true
	}
	if !queue.IsUUID(v) {
		return "", false
	}
	if v = strings.ToLower(v); v == defaultTenant1x {
		return "", true
	}
	return v, true
}

// scopeName is the stored name of the relative queue or group name given in field of
// a request: name itself for a global request, tenant:name for a tenant one. A
// relative name with the separator, a slash or a backslash, or one that is "." or
// "..", is 400: it would name or look like a name outside the tenant.
func scopeName(r *http.Request, field, name string) (string, error) {
	tenant := tenantFrom(r.Context())
	if tenant == "" || name == "" {
		return name, nil
	}
	if strings.ContainsAny(name, TenantSeparator+`/\`) || name == "." || name == ".." {
		return "", queue.Invalid(field, "%s must not contain %q, '/' or '\\'", field, TenantSeparator)
	}
	stored := tenant + TenantSeparator + name
	if err := queue.CheckName(field, stored); err != nil {
		return "", err
	}
	return stored, nil
}

// unscopeName is the name a request's answer shows for a stored name: the stored
// name for a global request, the relative one for a tenant request.
func unscopeName(r *http.Request, stored string) string {
	tenant := tenantFrom(r.Context())
	if tenant == "" {
		return stored
	}
	return strings.TrimPrefix(stored, tenant+TenantSeparator)
}

// unscopeText rewrites the stored names quoted in a message the broker wrote (e.g.
// queue "acme:orders" is full) as the tenant of r names them.
func unscopeText(r *http.Request, text string) string {
	if text == "" {
		return text
	}
	tenant := tenantFrom(r.Context())
	if tenant == "" {
		return text
	}
	return strings.ReplaceAll(text, `"`+tenant+TenantSeparator, `"`)
}

// handleTenancy is GET /internal/api/tenancy: whether tenancy is on and its header,
// which a proxy checks before it sends tenant traffic.
func (s *Server) handleTenancy(w http.ResponseWriter, _ *http.Request) error {
	return writeJSON(w, http.StatusOK, api.Tenancy{
		Enabled: s.opts.TenancyHeader != "", Header: s.opts.TenancyHeader, Separator: TenantSeparator,
	})
}

// handleTenancyUsage is GET /internal/api/tenancy/usage: every tenant's queues,
// partitions, stored messages and payload bytes, as the tenancy_usage job last computed
// them (every QUEEN_TENANCY_USAGE_INTERVAL while tenancy is on); computedAt null and no
// tenants until it has run.
func (s *Server) handleTenancyUsage(w http.ResponseWriter, r *http.Request) error {
	out := api.TenancyUsage{Tenants: []api.TenantUsage{}}
	rep, err := s.broker.TenantUsage(r.Context())
	if errors.Is(err, queue.ErrNotFound) {
		return writeJSON(w, http.StatusOK, out)
	}
	if err != nil {
		return err
	}
	out.ComputedAt = api.String(api.FormatMillis(rep.ComputedAt))
	for _, u := range rep.Tenants {
		out.Tenants = append(out.Tenants, api.TenantUsage{Tenant: u.Tenant, Queues: u.Queues,
			Partitions: u.Partitions, Messages: u.Messages, Bytes: u.Bytes})
	}
	return writeJSON(w, http.StatusOK, out)
}

// scopeGroup is scopeName for a consumer group; the queue-mode group is no tenant's
// and is never prefixed.
func scopeGroup(r *http.Request, field, group string) (string, error) {
	if group == queue.QueueModeGroup {
		return group, nil
	}
	return scopeName(r, field, group)
}

// scopePush maps the queue of every push item into the request's scope.
func scopePush(r *http.Request, items []queue.PushItem) error {
	if tenantFrom(r.Context()) == "" {
		return nil
	}
	for i := range items {
		q, err := scopeName(r, fmt.Sprintf("items[%d].queue", i), items[i].Queue)
		if err != nil {
			return err
		}
		items[i].Queue = q
	}
	return nil
}

// unscopePop shows a pop's stored queue and group names as the request sees them.
func unscopePop(r *http.Request, res *queue.PopResult) {
	if tenantFrom(r.Context()) == "" {
		return
	}
	res.Queue = unscopeName(r, res.Queue)
	res.ConsumerGroup = unscopeName(r, res.ConsumerGroup)
	for i := range res.Messages {
		res.Messages[i].Queue = unscopeName(r, res.Messages[i].Queue)
	}
}

// unscopeAcks shows the queue names of ack results as the request sees them.
func unscopeAcks(r *http.Request, results []queue.AckResult) {
	if tenantFrom(r.Context()) == "" {
		return
	}
	for i := range results {
		results[i].QueueName = unscopeName(r, results[i].QueueName)
	}
}

// scopeTxOp maps the names of one transaction operation (at field, e.g.
// operations[2]) into the request's scope: the queue of every pushed item and the
// consumer group of an ack.
func scopeTxOp(r *http.Request, op *queue.TxOp, field string) error {
	if tenantFrom(r.Context()) == "" {
		return nil
	}
	for j := range op.Push {
		q, err := scopeName(r, fmt.Sprintf("%s.items[%d].queue", field, j), op.Push[j].Queue)
		if err != nil {
			return err
		}
		op.Push[j].Queue = q
	}
	if op.Type == api.TxOpAck {
		g, err := scopeGroup(r, field+".consumerGroup", op.Ack.ConsumerGroup)
		if err != nil {
			return err
		}
		op.Ack.ConsumerGroup = g
	}
	return nil
}
