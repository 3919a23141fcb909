package gateway

import "github.com/queenmq/queen/internal/proxy/tenant"

// RouteEntry is one row of the route table, for the external tests that walk it.
type RouteEntry struct {
	Method, Pattern string
	Scope           tenant.Scope
	// Tenant marks a route forwarded for tenant credentials; Global one refused to
	// them; neither is a public route.
	Tenant, Global bool
}

// RouteTable is the route table as RouteEntry rows.
func RouteTable() []RouteEntry {
	out := make([]RouteEntry, 0, len(routeTable))
	for _, rt := range routeTable {
		out = append(out, RouteEntry{Method: rt.method, Pattern: rt.pattern, Scope: rt.scope,
			Tenant: rt.access == accessTenant, Global: rt.access == accessGlobal})
	}
	return out
}
