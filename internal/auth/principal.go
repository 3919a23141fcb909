package auth

import (
	"context"
	"slices"
	"time"
)

// Level is an access level: what a route requires, and what a token's roles grant.
// Levels are a set, not a ladder: see [Level.Allows] for which granted level passes
// which route level.
type Level int

// The access levels (docs/security.md lists the routes of each). As a principal's
// level, None is a valid token that carries none of the configured role values: it is
// refused on every protected route. ReadOnly and WriteOnly do not include each other.
const (
	None Level = iota
	ReadOnly
	WriteOnly
	ReadWrite
	Admin
)

// Public is the level of routes that need no token at all (health, metrics, dashboard
// assets). It is None: any request, with or without a token, satisfies it.
const Public = None

// String returns the level's name as the docs write it.
func (l Level) String() string {
	switch l {
	case None:
		return "public"
	case ReadOnly:
		return "read-only"
	case WriteOnly:
		return "write-only"
	case ReadWrite:
		return "read-write"
	case Admin:
		return "admin"
	}
	return "invalid"
}

// Allows reports whether a principal granted l may use a route of level route:
// every principal passes Public routes; Admin passes every route; ReadWrite every
// route but Admin ones; ReadOnly only ReadOnly routes; WriteOnly only WriteOnly routes
// (producers that may push and nothing else); None nothing else.
func (l Level) Allows(route Level) bool {
	switch {
	case route <= Public:
		return true
	case l == Admin:
		return true
	case l == ReadWrite:
		return route != Admin
	case l == ReadOnly, l == WriteOnly:
		return route == l
	}
	return false
}

// Principal is the verified identity behind a request.
type Principal struct {
	// Subject is the token's sub claim ("" when absent or not a string). It is the
	// producer identity stamped on pushed messages.
	Subject string
	// Username is the informational username claim, "" when absent or not a string.
	Username string
	// Roles are the string role values the token carries (single claim first, then the
	// array claim), whether or not they map to a level.
	Roles []string
	// Level is the highest level the roles grant, ranked Admin, ReadWrite, ReadOnly,
	// WriteOnly (what whoami reports).
	Level Level
	// Grants are all the levels the roles grant; a token with both the read-only and
	// the write-only role passes the routes of each.
	Grants []Level
	// ExpiresAt is the token's exp claim; zero for a token without one.
	ExpiresAt time.Time
	// Tenant is the queen_tenant claim, "" when absent or not a string. HasTenant
	// tells an absent claim from a present one of the wrong type or empty, which a
	// tenancy-on broker refuses rather than reading as "no tenant".
	Tenant    string
	HasTenant bool
}

// TenantClaim names the JWT claim that scopes a token to one tenant.
const TenantClaim = "queen_tenant"

// Require returns nil when p may use a route of level l: an *Error matching
// ErrUnauthenticated when there is no principal and l is not Public, one matching
// ErrForbidden when neither p's Level nor any of its Grants allows l.
func (p *Principal) Require(l Level) error {
	switch {
	case l <= Public:
		return nil
	case p == nil:
		return unauthenticated(MsgAuthRequired)
	case p.Level.Allows(l):
		return nil
	}
	for _, g := range p.Grants {
		if g.Allows(l) {
			return nil
		}
	}
	return forbidden()
}

// RoleNames configures where roles are read from and which values grant which level
// (JWT_ROLES_CLAIM, JWT_ROLES_ARRAY_CLAIM, JWT_ROLE_*). Comparison is exact and
// case-sensitive; an empty value never matches.
type RoleNames struct {
	Claim      string // single string role claim, e.g. "role"
	ArrayClaim string // array of strings claim, e.g. "roles"
	Admin      string
	ReadWrite  string
	ReadOnly   string
	WriteOnly  string // the Queen 1.x write-only role: push (and timers) only
}

// DefaultRoleNames returns upstream's defaults.
func DefaultRoleNames() RoleNames {
	return RoleNames{Claim: "role", ArrayClaim: "roles", Admin: "admin", ReadWrite: "read-write",
		ReadOnly: "read-only", WriteOnly: "write-only"}
}

// roles extracts the role values of claims: the single claim when it is a string, and
// the string members of the array claim (other members are skipped).
func (n RoleNames) roles(claims map[string]any) []string {
	var out []string
	if s, ok := claims[n.Claim].(string); ok && n.Claim != "" {
		out = append(out, s)
	}
	if arr, ok := claims[n.ArrayClaim].([]any); ok && n.ArrayClaim != "" {
		for _, v := range arr {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// grants returns the levels roles grant, ranked Admin, ReadWrite, ReadOnly, WriteOnly;
// nil for none.
func (n RoleNames) grants(roles []string) []Level {
	has := func(want string) bool { return want != "" && slices.Contains(roles, want) }
	var out []Level
	for _, g := range []struct {
		name  string
		level Level
	}{{n.Admin, Admin}, {n.ReadWrite, ReadWrite}, {n.ReadOnly, ReadOnly}, {n.WriteOnly, WriteOnly}} {
		if has(g.name) {
			out = append(out, g.level)
		}
	}
	return out
}

type ctxKey struct{}

// NewContext returns a copy of ctx carrying p.
func NewContext(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal stored by NewContext; ok is false when the request
// was not authenticated (auth off, a public or skipped route).
func FromContext(ctx context.Context) (p *Principal, ok bool) {
	p, ok = ctx.Value(ctxKey{}).(*Principal)
	return p, ok && p != nil
}
