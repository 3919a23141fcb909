package api

// Tenancy is the answer of GET /internal/api/tenancy: whether tenant scoping is on
// (QUEEN_TENANCY_HEADER set), the header that names the tenant, and the separator
// between a tenant id and a relative name in stored names.
type Tenancy struct {
	Enabled   bool   `json:"enabled"`
	Header    string `json:"header"`
	Separator string `json:"separator"`
}

// TenancyUsage is the answer of GET /internal/api/tenancy/usage: every tenant's usage
// as a broker job last computed it (computedAt, RFC 3339 UTC; null before its first run).
type TenancyUsage struct {
	ComputedAt *string `json:"computedAt"`
	// Tenants renders [] when empty.
	Tenants []TenantUsage `json:"tenants"`
}

// TenantUsage is what one tenant stores: its queues (relative names), their
// partitions, the stored messages (consumed or not, until retention deletes them) and
// the sum of pg_column_size(payload) over them.
type TenantUsage struct {
	Tenant     string   `json:"tenant"`
	Queues     []string `json:"queues"`
	Partitions int64    `json:"partitions"`
	Messages   int64    `json:"messages"`
	Bytes      int64    `json:"bytes"`
}
