package api

import (
	"net/http"
	"strings"
)

// Error codes of routes that exist on Queen 1.x brokers and not here. 1.x clients
// read no_such_route (and a family's own code, such as ephemeral_unsupported) as "this
// broker has no such route": they stop there instead of retrying, as they would on a
// 5xx. Both the broker and queen-proxy answer them (see [AbsentRoute]).
const (
	// ErrorCodeNoSuchRoute is a request under /api/ or /auth/, or with a method other
	// than GET and HEAD, that routes nowhere (404).
	ErrorCodeNoSuchRoute ErrorCode = "no_such_route"
	// ErrorCodeEphemeralUnsupported is any route of the 1.x ephemeral-queue family (404).
	ErrorCodeEphemeralUnsupported ErrorCode = "ephemeral_unsupported"
	// ErrorCodeAuthRequired is GET /auth/me on a broker with authentication on (401):
	// the broker has no session identity to report.
	ErrorCodeAuthRequired ErrorCode = "auth_required"
)

// Messages of the answers above. "Not Found" is also the text of the original 0.15
// broker's 404 for an unknown /api/ path.
const (
	MsgNoSuchRoute          = "Not Found"
	MsgEphemeralUnsupported = "ephemeral queues are not supported by this broker"
)

// The 1.x ephemeral-queue family: every path under EphemeralPrefix, and the admin
// switch EphemeralSwitch.
const (
	EphemeralPrefix = "/api/v1/ephemeral/"
	EphemeralSwitch = "/api/v1/system/ephemeral"
)

// FamilyAbsent is the answer to a request for path that routes nowhere, or with a
// method its path is not routed for, when path belongs to a 1.x family with an answer
// of its own: the ephemeral family's 404, or no_such_route under /auth, for /status
// and for the KV and timer routes (a 1.x broker has no 405: a method it does not route
// on a path is a route it does not have). ok is false for any other path.
func FamilyAbsent(path string) (body ErrorBody, ok bool) {
	switch {
	case strings.HasPrefix(path, EphemeralPrefix), path == EphemeralSwitch:
		return ErrorBody{Error: MsgEphemeralUnsupported, Code: ErrorCodeEphemeralUnsupported}, true
	case UnderPrefix(path, "/auth"), path == "/status",
		UnderPrefix(path, "/api/v1/kv"), UnderPrefix(path, "/api/v1/resources/kv"), UnderPrefix(path, "/api/v1/timers"):
		return ErrorBody{Error: MsgNoSuchRoute, Code: ErrorCodeNoSuchRoute}, true
	}
	return ErrorBody{}, false
}

// AbsentRoute is the 404 body of a request that routes nowhere when it must be JSON:
// [FamilyAbsent]'s, or no_such_route for any path under /api/ and any method other
// than GET and HEAD. ok is false for the GET and HEAD requests left, which a
// dashboard may serve.
func AbsentRoute(method, path string) (body ErrorBody, ok bool) {
	if body, ok := FamilyAbsent(path); ok {
		return body, true
	}
	if UnderPrefix(path, "/api") || (method != http.MethodGet && method != http.MethodHead) {
		return ErrorBody{Error: MsgNoSuchRoute, Code: ErrorCodeNoSuchRoute}, true
	}
	return ErrorBody{}, false
}

// UnderPrefix reports whether path is prefix itself or lies below it.
func UnderPrefix(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}
