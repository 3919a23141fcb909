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
	// Only connection-level failures carry it, so only they may send a push to the
	// disk spool.
	ErrUnavailable = errors.New("database unavailable")
	// ErrTimeout means PostgreSQL did not answer in time: the caller's deadline passed
	// (the error also matches context.DeadlineExceeded), or statement_timeout or
	// lock_timeout cancelled the statement. The database is not known to be down, and
	// after a deadline the statement may still have committed, so it is never a reason
	// to spool.
	ErrTimeout = errors.New("database timeout")
	// ErrOutcomeUnknown accompanies ErrUnavailable when the connection was lost after
	// the statement was sent (the server crashed, or was switched over, under it): it
	// may have committed. A push falls back to the spool all the same (replay
	// deduplicates on the transaction id); other requests are answered 503 saying so.
	ErrOutcomeUnknown = errors.New("connection lost during the statement")
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

// ConflictError is a clash with stored state described by the broker. It matches
// ErrConflict (HTTP 409); Message is written by the broker and safe to show clients.
// A bare ErrConflict (e.g. a unique violation translated by the store) is answered
// with a fixed message instead, so no database text reaches a client.
type ConflictError struct {
	Message string
}

func (e *ConflictError) Error() string { return e.Message }

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// Conflict returns a *ConflictError with a formatted message.
func Conflict(format string, args ...any) error {
	return &ConflictError{Message: fmt.Sprintf(format, args...)}
}
