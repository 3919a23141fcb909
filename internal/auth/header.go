package auth

import "strings"

// bearerPrefix is the scheme prefix of an Authorization header, matched
// case-insensitively.
const bearerPrefix = "Bearer "

// TokenFromAuthorization extracts the token from an Authorization header value (see
// docs/security.md): the text after a case-insensitive "Bearer " prefix when the
// header is longer than the prefix, otherwise the whole value, which upstream also
// accepts. Surrounding spaces are trimmed; "" means no token.
func TokenFromAuthorization(value string) string {
	value = strings.TrimSpace(value)
	if len(value) > len(bearerPrefix) && strings.EqualFold(value[:len(bearerPrefix)], bearerPrefix) {
		return strings.TrimSpace(value[len(bearerPrefix):])
	}
	return value
}
