package tenant

import (
	"errors"
	"fmt"
)

// Sentinel errors shared by the proxy's store, gateway and admin API. The store
// translates database errors into them; the HTTP layers map them to statuses.
var (
	// ErrNotFound is an unknown tenant, key or user.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists is a create of a tenant id, username or cell name in use.
	ErrAlreadyExists = errors.New("already exists")
	// ErrIDNeverReused is a create of a tenant id that exists or existed (tombstones
	// count); it wraps ErrAlreadyExists.
	ErrIDNeverReused = fmt.Errorf("%w (tenant ids are never reused)", ErrAlreadyExists)
	// ErrConflict is a change the current state forbids (rotating a revoked key).
	ErrConflict = errors.New("conflict")
	// ErrUnavailable is the proxy's database not answering.
	ErrUnavailable = errors.New("proxy database unavailable")
)

// ValidationError is a request field with an invalid value.
type ValidationError struct {
	// Field is the JSON name of the offending field.
	Field string
	// Msg says what is wrong, for the client.
	Msg string
}

// Error returns the message for the client.
func (e *ValidationError) Error() string { return e.Field + ": " + e.Msg }

func invalid(field, msg string) error { return &ValidationError{Field: field, Msg: msg} }
