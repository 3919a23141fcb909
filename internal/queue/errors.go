package queue

import (
	"errors"
	"fmt"
)

// Sentinel errors shared by every layer. Storage wraps database failures into them;
// the HTTP layer maps them to status codes in one table.
var (
	// ErrNotFound means the named queue, partition, message or lease does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict means the request clashes with stored state.
	ErrConflict = errors.New("conflict")
	// ErrUnavailable means PostgreSQL could not be reached; the request had no effect.
	ErrUnavailable = errors.New("database unavailable")
	// ErrNotSupported means a feature or option is recognised but not implemented.
	ErrNotSupported = errors.New("not supported")
)

// ValidationError reports one bad input field. Message is the client-facing text
// (upstream wording where clients rely on it); Field names the offending field.
type ValidationError struct {
	Field   string
	Message string
}

func (e *ValidationError) Error() string { return e.Message }

// Invalid returns a *ValidationError for field with a formatted message.
func Invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Message: fmt.Sprintf(format, args...)}
}
