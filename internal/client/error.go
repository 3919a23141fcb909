package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/queenmq/queen/internal/api"
)

// Error is a failure answered by the broker: any status >= 400, or a 2xx whose body is
// upstream's {"error":...} failure shape where the typed method expected success.
type Error struct {
	// Method and Path identify the request (Path includes the query string).
	Method, Path string
	// StatusCode is the HTTP status (2xx for upstream's 200-with-error answers).
	StatusCode int
	// Message is body.error when the body is JSON, else the raw body, else the status
	// text.
	Message string
	// Code is body.code when present. For an answer without one it is inferred from
	// the status, and from a "not found" message on upstream's 200-with-error answers.
	Code api.ErrorCode
	// Field is body.field when present.
	Field string
	// Body is the raw response body.
	Body []byte
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("queen: %s %s: HTTP %d: %s", e.Method, e.Path, e.StatusCode, e.Message)
}

// newError builds the [*Error] of a response.
func newError(r *response) *Error {
	e := &Error{Method: r.method, Path: r.path, StatusCode: r.status, Body: r.body}
	var body struct {
		Error json.RawMessage `json:"error"`
		Code  string          `json:"code"`
		Field string          `json:"field"`
	}
	trimmed := bytes.TrimSpace(r.body)
	switch {
	case len(trimmed) == 0:
		e.Message = http.StatusText(r.status)
	case json.Unmarshal(trimmed, &body) == nil && len(body.Error) > 0:
		e.Code, e.Field = api.ErrorCode(body.Code), body.Field
		var nested struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(body.Error, &e.Message) != nil && json.Unmarshal(body.Error, &nested) == nil {
			// {"error":{"code","message"}}: tolerated, though our broker sends it flat.
			e.Message = nested.Message
			if e.Code == "" {
				e.Code = api.ErrorCode(nested.Code)
			}
		}
	default:
		e.Message = string(trimmed)
	}
	if e.Code == "" {
		e.Code = inferCode(r.status, e.Message)
	}
	return e
}

// inferCode maps a status (or, for a 2xx, a "not found" message) to an [api.ErrorCode].
func inferCode(status int, msg string) api.ErrorCode {
	switch status {
	case http.StatusBadRequest:
		return api.ErrorCodeInvalidArgument
	case http.StatusUnauthorized:
		return api.ErrorCodeUnauthenticated
	case http.StatusForbidden:
		return api.ErrorCodeForbidden
	case http.StatusNotFound:
		return api.ErrorCodeNotFound
	case http.StatusMethodNotAllowed:
		return api.ErrorCodeMethodNotAllowed
	case http.StatusConflict:
		return api.ErrorCodeConflict
	case http.StatusRequestEntityTooLarge:
		return api.ErrorCodePayloadTooLarge
	case http.StatusServiceUnavailable:
		return api.ErrorCodeUnavailable
	case http.StatusGatewayTimeout:
		return api.ErrorCodeTimeout
	}
	switch {
	case status >= 500:
		return api.ErrorCodeInternal
	case status < 300 && strings.Contains(strings.ToLower(msg), "not found"):
		return api.ErrorCodeNotFound
	}
	return ""
}

// AsError returns the [*Error] in err's chain, or nil.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// StatusCode returns the HTTP status of the [*Error] in err's chain, or 0 when err did
// not come from a broker answer (nil, transport error, ...).
func StatusCode(err error) int {
	if e := AsError(err); e != nil {
		return e.StatusCode
	}
	return 0
}

// IsNotFound reports whether err is a broker "not found" answer (404, or upstream's 200
// with a "... not found" error).
func IsNotFound(err error) bool { return hasCode(err, api.ErrorCodeNotFound) }

// IsInvalidArgument reports whether err is a 400-class validation answer.
func IsInvalidArgument(err error) bool { return hasCode(err, api.ErrorCodeInvalidArgument) }

// IsConflict reports whether err is a 409 answer (conflict or already exists).
func IsConflict(err error) bool {
	return hasCode(err, api.ErrorCodeConflict) || hasCode(err, api.ErrorCodeAlreadyExists)
}

// IsUnavailable reports whether err is a 503 answer.
func IsUnavailable(err error) bool { return hasCode(err, api.ErrorCodeUnavailable) }

func hasCode(err error, code api.ErrorCode) bool {
	e := AsError(err)
	return e != nil && e.Code == code
}
