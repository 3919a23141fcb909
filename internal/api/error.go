package api

// ErrorCode is a stable machine-readable error code carried in [ErrorBody.Code]. Codes
// are snake_case words, frozen once published; messages may change.
type ErrorCode string

// Error codes and the HTTP status each goes with.
const (
	// ErrorCodeInvalidArgument is a malformed or invalid request (400).
	ErrorCodeInvalidArgument ErrorCode = "invalid_argument"
	// ErrorCodeUnauthenticated is a missing or invalid token (401).
	ErrorCodeUnauthenticated ErrorCode = "unauthenticated"
	// ErrorCodeForbidden is a token without the needed role (403).
	ErrorCodeForbidden ErrorCode = "forbidden"
	// ErrorCodeNotFound is an unknown queue, message, route, ... (404).
	ErrorCodeNotFound ErrorCode = "not_found"
	// ErrorCodeMethodNotAllowed is what a client reports for a 405 without a code (queen
	// answers a known path asked with another method as an unknown route: 404).
	ErrorCodeMethodNotAllowed ErrorCode = "method_not_allowed"
	// ErrorCodeAlreadyExists is a create of something that exists (409).
	ErrorCodeAlreadyExists ErrorCode = "already_exists"
	// ErrorCodeConflict is a state conflict (409).
	ErrorCodeConflict ErrorCode = "conflict"
	// ErrorCodePayloadTooLarge is a body over the size limit (413).
	ErrorCodePayloadTooLarge ErrorCode = "payload_too_large"
	// ErrorCodeUnavailable is a database outage that cannot be spooled, or a request
	// the broker cancelled (503).
	ErrorCodeUnavailable ErrorCode = "unavailable"
	// ErrorCodeTenantMoving is a request of a tenant fenced on this broker while
	// queen-proxy moves it to another cell (503, Retry-After: 1): nothing was run.
	// queen-proxy holds or re-sends such a request itself.
	ErrorCodeTenantMoving ErrorCode = "tenant_moving"
	// ErrorCodeTimeout is a database that did not answer in time (504): not an outage,
	// and the request may have taken effect.
	ErrorCodeTimeout ErrorCode = "timeout"
	// ErrorCodeInternal is anything else (500).
	ErrorCodeInternal ErrorCode = "internal"
)

// Error codes only queen-proxy answers, in front of the broker. They share the
// vocabulary above so a client reads one table whichever of the two answered.
const (
	// ErrorCodeNonCanonicalPath is a path the proxy refuses to route because it is
	// not in canonical form (400).
	ErrorCodeNonCanonicalPath ErrorCode = "non_canonical_path"
	// ErrorCodeCredentialsInQuery is a credential sent in the query string (400).
	ErrorCodeCredentialsInQuery ErrorCode = "credentials_in_query"
	// ErrorCodeForbiddenHeader is a request header only the proxy may set (400).
	ErrorCodeForbiddenHeader ErrorCode = "forbidden_header"
	// ErrorCodeTenantSuspended is a request of a suspended tenant (403).
	ErrorCodeTenantSuspended ErrorCode = "tenant_suspended"
	// ErrorCodeRateLimited is a request over one of the tenant's admission limits
	// (429, with [ErrorBody.Limit] and [ErrorBody.RetryAfterMs]).
	ErrorCodeRateLimited ErrorCode = "rate_limited"
	// ErrorCodeQuotaExceeded is a push or configure over the tenant's storage quota
	// (429, with [ErrorBody.Limit] and [ErrorBody.RetryAfterMs]).
	ErrorCodeQuotaExceeded ErrorCode = "quota_exceeded"
	// ErrorCodeBadGateway is a broker connection that failed (502).
	ErrorCodeBadGateway ErrorCode = "bad_gateway"
)

// ErrorBody is the JSON body of every error response. It is flat because upstream
// compatibility requires "error" to be the message string ({"error":"queue is required"},
// read as body.error by the js and py clients); the code, the offending field and the
// request id are additive keys beside it. Success is set only by the routes whose
// database failures upstream renders as {"success":false,"error":"..."}.
type ErrorBody struct {
	// Success is false on database-level failures of DB-backed routes; nil omits it.
	Success *bool `json:"success,omitempty"`
	// Error is the human-readable message.
	Error string `json:"error"`
	// Code is the stable machine-readable code.
	Code ErrorCode `json:"code,omitempty"`
	// Field names the offending request field of a validation error.
	Field string `json:"field,omitempty"`
	// Limit names the limit a queen-proxy 429 is about: requests, messages,
	// concurrency, bytes or queues. The broker never sets it.
	Limit string `json:"limit,omitempty"`
	// RetryAfterMs is a queen-proxy 429's Retry-After in milliseconds. The broker
	// never sets it.
	RetryAfterMs int64 `json:"retryAfterMs,omitempty"`
	// RequestID correlates the answer with the server log.
	RequestID string `json:"request_id,omitempty"`
}
