package config

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is matched by every error that Load and Validate return:
// errors.Is(err, config.ErrInvalid) tells a configuration problem (exit status 78,
// EX_CONFIG) from any other failure.
var ErrInvalid = errors.New("config: invalid configuration")

// Error is one configuration problem: the variable, the value it had and what is wrong
// with it. Load and Validate join several of them with errors.Join; use errors.As to
// reach the first one and errors.Is(err, ErrInvalid) to classify.
type Error struct {
	// Name is the environment variable at fault (the first one, when a combination of
	// variables is wrong).
	Name string
	// Value is the value as given, or "<redacted>" for secrets.
	Value string
	// Reason says what is wrong, in lowercase, naming any other variables involved.
	Reason string

	// related lists the other variables a combination check read, so that Load can
	// drop the check when one of them already failed to parse.
	related []string
}

// Error formats the problem as `config: NAME="value": reason`.
func (e *Error) Error() string {
	if e.Value == redacted {
		return fmt.Sprintf("config: %s=%s: %s", e.Name, e.Value, e.Reason)
	}
	return fmt.Sprintf("config: %s=%q: %s", e.Name, e.Value, e.Reason)
}

// Is reports whether target is ErrInvalid, so that errors.Is works on a joined error.
func (e *Error) Is(target error) bool {
	return target == ErrInvalid
}

// involves reports whether the problem reads one of the named variables.
func (e *Error) involves(names map[string]bool) bool {
	if names[e.Name] {
		return true
	}
	for _, n := range e.related {
		if names[n] {
			return true
		}
	}
	return false
}

// redacted replaces secret values in messages, printouts and logs.
const redacted = "<redacted>"

// quoteIfNeeded returns s unchanged when it prints safely on one line of a
// NAME=value listing, and Go-quoted otherwise (spaces, '#', quotes, control
// characters, or nothing at all would make the line ambiguous).
func quoteIfNeeded(s string) string {
	if s == "" {
		return s
	}
	if strings.ContainsFunc(s, func(r rune) bool {
		return r <= ' ' || r == '#' || r == '"' || r == '\'' || r == '\\' || r == 0x7f
	}) {
		return fmt.Sprintf("%q", s)
	}
	return s
}
