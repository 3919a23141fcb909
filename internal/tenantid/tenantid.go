// Package tenantid is the grammar of a tenant id, the one rule the broker (which
// scopes names by the tenancy header or a token's tenant claim) and queen-proxy
// (which creates tenants and sends that header) must agree on: 2–32 characters of
// lowercase letters, digits and '-', starting with a letter and not ending with '-',
// and not one of the reserved ids that name the proxy's and the broker's own
// principals. A tenant id is also the prefix of every stored name of the tenant, so
// loosening the grammar is a wire change on both sides.
package tenantid

import (
	"errors"
	"regexp"
	"slices"
)

// Grammar says in words what [Check] accepts, for error messages.
const Grammar = "2-32 characters of [a-z0-9-], start with a letter and not end with '-'"

var (
	// ErrMalformed is an id outside the grammar.
	ErrMalformed = errors.New("tenant id must be " + Grammar)
	// ErrReserved is a well-formed id that no tenant may have.
	ErrReserved = errors.New("tenant id is reserved")
)

var pattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,30}[a-z0-9]$`)

// reserved are the ids no tenant may have.
var reserved = []string{"queen", "system", "admin", "internal", "proxy"}

// Check returns nil for a valid tenant id, [ErrMalformed] for one outside the
// grammar and [ErrReserved] for a reserved one.
func Check(id string) error {
	if !pattern.MatchString(id) {
		return ErrMalformed
	}
	if slices.Contains(reserved, id) {
		return ErrReserved
	}
	return nil
}

// Valid reports whether id is a well-formed, unreserved tenant id.
func Valid(id string) bool { return Check(id) == nil }
