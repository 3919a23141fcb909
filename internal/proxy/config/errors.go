package config

import (
	"errors"
	"fmt"
)

// Error is one invalid setting. Load joins every one it finds.
type Error struct {
	// Var is the variable's name.
	Var string
	// Msg says what is wrong; it never repeats a secret's value.
	Msg string
}

// Error names the variable first, so that the operator sees which one to fix.
func (e *Error) Error() string { return fmt.Sprintf("config: %s: %s", e.Var, e.Msg) }

// IsConfigError reports whether err holds at least one *Error: the process then
// exits 78.
func IsConfigError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
