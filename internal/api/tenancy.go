package api

// Tenancy is the answer of GET /internal/api/tenancy: whether tenant scoping is on
// (QUEEN_TENANCY_HEADER set), the header that names the tenant, and the separator
// between a tenant id and a relative name in stored names.
type Tenancy struct {
	Enabled   bool   `json:"enabled"`
	Header    string `json:"header"`
	Separator string `json:"separator"`
}
