// Package cors adds the Access-Control-* headers of Queen's HTTP API to the answers
// for the browser origins an operator allows: the broker's CORS_ALLOWED_ORIGINS and
// queen-proxy's QUEEN_PROXY_CORS_ALLOWED_ORIGINS. With no origin allowed nothing is
// ever added.
package cors

import (
	"net/http"
	"slices"
	"strings"
)

// The header values, as the upstream broker sends them.
const (
	allowMethods = "GET, POST, PUT, DELETE, OPTIONS"
	allowHeaders = "Content-Type, Authorization"
	maxAge       = "86400"
)

// Origin returns the Access-Control-Allow-Origin value for a request from origin, or
// "" when no CORS header must be sent. "*" is answered only if allowed lists "*"; a
// listed origin is echoed only on an exact match.
func Origin(allowed []string, origin string) string {
	switch {
	case len(allowed) == 0:
		return ""
	case slices.Contains(allowed, "*"):
		return "*"
	case origin != "" && slices.Contains(allowed, origin):
		return origin
	}
	return ""
}

// Apply sets the CORS headers of an answer to r on h when r's Origin is allowed, and
// reports whether it did. A preflight (OPTIONS) also gets Access-Control-Max-Age.
// With a list of origins (not "*") every answer carries Vary: Origin, refusals
// included, so that a cache never hands one origin's answer to another.
func Apply(h http.Header, allowed []string, r *http.Request) bool {
	if len(allowed) > 0 && !slices.Contains(allowed, "*") {
		h.Add("Vary", "Origin")
	}
	allow := Origin(allowed, r.Header.Get("Origin"))
	if allow == "" {
		return false
	}
	h.Set("Access-Control-Allow-Origin", allow)
	h.Set("Access-Control-Allow-Methods", allowMethods)
	h.Set("Access-Control-Allow-Headers", allowHeaders)
	if r.Method == http.MethodOptions {
		h.Set("Access-Control-Max-Age", maxAge)
	}
	return true
}

// IsHeader reports whether name is one of the Access-Control-* headers (any case).
func IsHeader(name string) bool {
	return len(name) > len("Access-Control-") && strings.EqualFold(name[:len("Access-Control-")], "Access-Control-")
}
