package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/queenmq/queen/internal/api"
)

// Error codes of the gateway's own answers: short names for the broker's vocabulary
// (package api), which owns them. They are stable; messages may change.
const (
	codeInvalidArgument    = api.ErrorCodeInvalidArgument
	codeNonCanonical       = api.ErrorCodeNonCanonicalPath
	codeCredentialsInQuery = api.ErrorCodeCredentialsInQuery
	codeForbiddenHeader    = api.ErrorCodeForbiddenHeader
	codeUnauthenticated    = api.ErrorCodeUnauthenticated
	codeForbidden          = api.ErrorCodeForbidden
	codeTenantSuspended    = api.ErrorCodeTenantSuspended
	codeNotFound           = api.ErrorCodeNotFound
	codePayloadTooLarge    = api.ErrorCodePayloadTooLarge
	codeRateLimited        = api.ErrorCodeRateLimited
	codeQuotaExceeded      = api.ErrorCodeQuotaExceeded
	codeUnavailable        = api.ErrorCodeUnavailable
	codeBadGateway         = api.ErrorCodeBadGateway
	codeGatewayTimeout     = api.ErrorCodeTimeout
)

// apiError is an answer the gateway gives itself, never a broker's.
type apiError struct {
	status     int
	code       api.ErrorCode
	msg        string
	limit      string        // 429: requests, messages, concurrency, bytes, queues
	retryAfter time.Duration // 429 and 503: Retry-After
	// field names the request field a 400 is about ("" = none).
	field string
	// result is the tenant_requests_total result it counts as ("" = none).
	result string
	// tenant and keyID name whose refused credential it answers, when the proxy
	// knows (a revoked key's tenant): the refusal counts for that tenant.
	tenant, keyID string
}

func (e *apiError) Error() string { return e.msg }

// of attributes e to a tenant and, for a key, its id.
func (e *apiError) of(tenantID, keyID string) *apiError {
	e.tenant, e.keyID = tenantID, keyID
	return e
}

func errorf(status int, code api.ErrorCode, msg string) *apiError {
	return &apiError{status: status, code: code, msg: msg}
}

// writeError writes e with the request's id, in the broker's flat error shape
// ([api.ErrorBody]) with the 429 fields (limit, retryAfterMs).
func writeError(w http.ResponseWriter, requestID string, e *apiError) {
	writeHeaders(w, e)
	_ = json.NewEncoder(w).Encode(errorBody(requestID, e))
}

// txErrorBody is a refused /transaction's answer: the transaction's envelope
// (transactionId, success, reason, results), as the broker refuses one before the
// database, around the flat error fields.
type txErrorBody struct {
	TransactionID string `json:"transactionId"`
	api.ErrorBody
	Reason  string     `json:"reason"`
	Results []struct{} `json:"results"`
}

// writeTxError writes e in the envelope of a refused transaction, under txID (minted
// for the call: every transaction answer carries one): reason bad_request (400) or
// payload_too_large (413), as the broker names them, else e's code.
func writeTxError(w http.ResponseWriter, requestID, txID string, e *apiError) {
	writeHeaders(w, e)
	body := txErrorBody{TransactionID: txID, ErrorBody: errorBody(requestID, e), Reason: string(e.code), Results: []struct{}{}}
	body.Success = api.Bool(false)
	switch e.status {
	case http.StatusBadRequest:
		body.Reason = "bad_request"
	case http.StatusRequestEntityTooLarge:
		body.Reason = "payload_too_large"
	}
	_ = json.NewEncoder(w).Encode(body)
}

func errorBody(requestID string, e *apiError) api.ErrorBody {
	body := api.ErrorBody{Error: e.msg, Code: e.code, Field: e.field, Limit: e.limit, RequestID: requestID}
	if e.status == http.StatusTooManyRequests {
		body.RetryAfterMs = max(1, e.retryAfter.Milliseconds())
	}
	return body
}

func writeHeaders(w http.ResponseWriter, e *apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64(max(1, (e.retryAfter+time.Second-1)/time.Second)), 10))
	}
	if e.status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", "Bearer")
	}
	w.WriteHeader(e.status)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
