package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Error codes of the gateway's own answers. They are stable; messages may change.
const (
	codeInvalidArgument    = "invalid_argument"
	codeNonCanonical       = "non_canonical_path"
	codeCredentialsInQuery = "credentials_in_query"
	codeForbiddenHeader    = "forbidden_header"
	codeUnauthenticated    = "unauthenticated"
	codeForbidden          = "forbidden"
	codeTenantSuspended    = "tenant_suspended"
	codeNotFound           = "not_found"
	codePayloadTooLarge    = "payload_too_large"
	codeRateLimited        = "rate_limited"
	codeQuotaExceeded      = "quota_exceeded"
	codeUnavailable        = "unavailable"
	codeBadGateway         = "bad_gateway"
	codeGatewayTimeout     = "timeout"
)

// apiError is an answer the gateway gives itself, never a broker's.
type apiError struct {
	status     int
	code       string
	msg        string
	limit      string        // 429: requests, messages, concurrency, bytes, queues
	retryAfter time.Duration // 429 and 503: Retry-After
	// field names the request field a 400 is about ("" = none).
	field string
	// result is the tenant_requests_total result it counts as ("" = none).
	result string
}

func (e *apiError) Error() string { return e.msg }

func errorf(status int, code, msg string) *apiError {
	return &apiError{status: status, code: code, msg: msg}
}

// errorBody is the flat error shape of the broker, plus the 429 fields.
type errorBody struct {
	Error        string `json:"error"`
	Code         string `json:"code"`
	Field        string `json:"field,omitempty"`
	Limit        string `json:"limit,omitempty"`
	RetryAfterMs int64  `json:"retryAfterMs,omitempty"`
	RequestID    string `json:"request_id,omitempty"`
}

// writeError writes e with the request's id.
func writeError(w http.ResponseWriter, requestID string, e *apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64(max(1, (e.retryAfter+time.Second-1)/time.Second)), 10))
	}
	if e.status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", "Bearer")
	}
	w.WriteHeader(e.status)
	body := errorBody{Error: e.msg, Code: e.code, Field: e.field, Limit: e.limit, RequestID: requestID}
	if e.status == http.StatusTooManyRequests {
		body.RetryAfterMs = max(1, e.retryAfter.Milliseconds())
	}
	_ = json.NewEncoder(w).Encode(body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
