package auth

import (
	"context"
	"slices"
	"time"
)

// Level is an access level: what a route requires, and what a token's roles grant.
// Levels are ordered; a principal satisfies every level up to its own.
type Level int

// The access levels, lowest first (docs/security.md lists the routes of each). As a
// principal's level, None is a valid token that carries none of the configured role
// values: it is refused on every protected route.
const (
	None Level = iota
	ReadOnly
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
	case ReadWrite:
		return "read-write"
	case Admin:
		return "admin"
	}
	return "invalid"
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
	// Level is the highest level the roles grant.
	Level Level
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
// ErrForbidden when p's level is below l.
func (p *Principal) Require(l Level) error {
	switch {
	case l <= Public:
		return nil
	case p == nil:
		return unauthenticated(MsgAuthRequired)
	case p.Level < l:
		return forbidden()
	}
	return nil
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
}

// DefaultRoleNames returns upstream's defaults.
func DefaultRoleNames() RoleNames {
	return RoleNames{Claim: "role", ArrayClaim: "roles", Admin: "admin", ReadWrite: "read-write", ReadOnly: "read-only"}
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

// level returns the highest level roles grant.
func (n RoleNames) level(roles []string) Level {
	has := func(want string) bool { return want != "" && slices.Contains(roles, want) }
	switch {
	case has(n.Admin):
		return Admin
	case has(n.ReadWrite):
		return ReadWrite
	case has(n.ReadOnly):
		return ReadOnly
	}
	return None
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
