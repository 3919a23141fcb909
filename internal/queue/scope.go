package queue

import (
	"strings"
	"time"
)

// TenantSeparator joins a tenant id and a relative queue or consumer-group name into
// the stored name ("acme" + ":" + "orders" is stored as "acme:orders").
const TenantSeparator = ":"

// Scope is the set of queues a request may touch. The zero value is the global scope:
// every queue, under its stored name. A tenant scope holds only the queues whose stored
// names start with the tenant id and TenantSeparator; the broker answers everything
// outside it as nonexistent.
type Scope struct {
	// Tenant is the tenant id, "" for the global scope.
	Tenant string
}

// IsGlobal reports whether the scope is the global one.
func (s Scope) IsGlobal() bool { return s.Tenant == "" }

// Prefix is the start every stored name of the scope has: "" for the global scope,
// "acme:" for tenant acme.
func (s Scope) Prefix() string {
	if s.Tenant == "" {
		return ""
	}
	return s.Tenant + TenantSeparator
}

// Relative is the name the scope's requests see for a stored name: the stored name in
// the global scope, the name without the tenant prefix in a tenant scope.
func (s Scope) Relative(stored string) string {
	if s.Tenant == "" {
		return stored
	}
	return strings.TrimPrefix(stored, s.Prefix())
}

// Stored is the stored name of a relative name (already checked by the HTTP layer):
// name itself in the global scope and for the empty name.
func (s Scope) Stored(name string) string {
	if s.Tenant == "" || name == "" {
		return name
	}
	return s.Prefix() + name
}

// TenantUsage is what one tenant stores: its queues (relative names, sorted), their
// partitions, the stored messages (consumed or not) and the bytes of their payloads.
type TenantUsage struct {
	Tenant     string
	Queues     []string
	Partitions int64
	Messages   int64
	Bytes      int64
}

// TenantUsageReport is every tenant's usage as computed at ComputedAt.
type TenantUsageReport struct {
	ComputedAt time.Time
	Tenants    []TenantUsage
}
