// Package tenant is the proxy's domain core: tenants and their ids, limits and
// quotas, API keys (their format, hashing and scopes) and the sentinel errors the
// other proxy packages share. It imports only the standard library.
package tenant
