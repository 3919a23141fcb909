package tenant

import (
	"fmt"
	"regexp"
	"time"
	"unicode"
	"unicode/utf8"
)

// User is a login account of the proxy. A user with a Tenant acts in that tenant;
// one without is an operator, forwarded to the brokers in global scope.
type User struct {
	ID        int64
	Username  string
	Role      string
	Tenant    *string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TenantID is the user's tenant, "" for an operator.
func (u *User) TenantID() string {
	if u.Tenant == nil {
		return ""
	}
	return *u.Tenant
}

// User roles: the broker's role names, as the 0.15 users table stores them.
const (
	RoleAdmin     = "admin"
	RoleReadWrite = "read-write"
	RoleReadOnly  = "read-only"
)

// RoleScope is the scope a user role grants: admin, write or read.
func RoleScope(role string) (Scope, error) {
	switch role {
	case RoleAdmin:
		return ScopeAdmin, nil
	case RoleReadWrite:
		return ScopeWrite, nil
	case RoleReadOnly:
		return ScopeRead, nil
	}
	return "", invalid("role", "must be admin, read-write or read-only")
}

var usernamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// ValidateUsername checks a user name: 1–64 characters of letters, digits and
// ._@-, starting with a letter or digit.
func ValidateUsername(name string) error {
	if !usernamePattern.MatchString(name) {
		return invalid("username", "must be 1-64 characters of [A-Za-z0-9._@-], starting with a letter or digit")
	}
	return nil
}

// Password length bounds: bcrypt reads at most 72 bytes, so longer passwords are
// refused rather than silently truncated.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 72
)

// ValidatePassword checks a new password's length.
func ValidatePassword(pw string) error {
	if len(pw) < MinPasswordLen || len(pw) > MaxPasswordLen {
		return invalid("password", "must be 8 to 72 bytes")
	}
	return nil
}

// MaxDisplayName is the longest name of a tenant or a key, in characters.
const MaxDisplayName = 255

// ValidateDisplayName checks the name of a tenant or a key, shown as it is in lists
// and logs: at most MaxDisplayName characters, none a control character (a line
// break in a name would split a log line or a table row).
func ValidateDisplayName(field, name string) error {
	if utf8.RuneCountInString(name) > MaxDisplayName {
		return invalid(field, fmt.Sprintf("must be at most %d characters", MaxDisplayName))
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return invalid(field, "must not contain control characters")
		}
	}
	return nil
}
