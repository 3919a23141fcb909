// Package envvalue is the value parser both daemons' settings share: the kinds of value
// a setting can hold (booleans in systemd's vocabulary, integers and durations with
// bounds, lists, enums, URLs, PEM…), each parsed strictly from its raw environment
// string. internal/config (the broker) and internal/proxy/config (queen-proxy) bind
// their fields to these kinds in their own tables. It is a leaf: the standard library
// only.
package envvalue

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Value binds one configuration field to a setting, much like flag.Value: Set parses
// a raw environment value into the field (leaving the field untouched on error), Get
// formats the field back in the variable's own units, and Kind names the type for the
// docs.
type Value interface {
	Set(raw string) error
	Get() string
	Kind() string
}

// Resetter is implemented by values whose unset state is not the parse of a default
// string (a setting for which unset and set-but-empty mean different things).
type Resetter interface {
	Reset()
}

// NoMax is the upper bound of integer settings that have no natural one. It keeps
// every int setting inside 32 bits, so nothing overflows on any platform.
const NoMax = math.MaxInt32

// SyntaxError is a raw value that is not of its setting's kind at all, or too large
// for the kind to hold.
type SyntaxError struct {
	// Kind names what the value should have been: "boolean", "integer", "duration".
	Kind   string
	reason string
}

// Error says what is wrong, without the value (the caller names it).
func (e *SyntaxError) Error() string { return e.reason }

// RangeError is a well-formed value outside the bounds of its setting.
type RangeError struct {
	// Got is the value as parsed, and Min and Max the bounds, each formatted in the
	// setting's units ("70000", "1h0m0s"); Max is "" when there is no upper bound.
	Got, Min, Max string
	reason        string
}

// Error says what the bounds are, without the value (the caller names it).
func (e *RangeError) Error() string { return e.reason }

// ParseBool accepts true/false, 1/0, yes/no and on/off in any case, and nothing else:
// "ture", "enabled" or "yes # comment" are errors, never false.
func ParseBool(s string) (b, ok bool) {
	switch strings.ToLower(s) {
	case "true", "1", "yes", "on":
		return true, true
	case "false", "0", "no", "off":
		return false, true
	}
	return false, false
}

// ParseInt parses a whole base-10 integer within [min, max]: no spaces, no numeric
// prefix ("12abc" is an error, not 12), no silent 0. Its errors are a *SyntaxError or
// a *RangeError.
func ParseInt(raw string, min, max int64) (int64, error) {
	n, err := strconv.ParseInt(raw, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, &SyntaxError{Kind: "integer", reason: "integer out of range"}
	case err != nil:
		return 0, &SyntaxError{Kind: "integer", reason: "not an integer"}
	case n < min || n > max:
		reason := "must be" + RangeDoc(min, max)
		if n > max { // RangeDoc leaves out a max of NoMax or more, which is the one broken
			reason = fmt.Sprintf("must be between %d and %d", min, max)
		}
		return 0, &RangeError{
			Got: strconv.FormatInt(n, 10), Min: strconv.FormatInt(min, 10), Max: strconv.FormatInt(max, 10),
			reason: reason,
		}
	}
	return n, nil
}

// RangeDoc describes [min, max] for messages and docs, e.g. " between 1 and 65535",
// or " ≥ 1" when max is NoMax or more.
func RangeDoc(min, max int64) string {
	if max >= NoMax {
		return fmt.Sprintf(" ≥ %d", min)
	}
	return fmt.Sprintf(" between %d and %d", min, max)
}

// Bool is a boolean in systemd's vocabulary (see ParseBool).
type Bool struct{ P *bool }

// Set parses raw with ParseBool; its error is a *SyntaxError.
func (v Bool) Set(raw string) error {
	b, ok := ParseBool(raw)
	if !ok {
		return &SyntaxError{Kind: "boolean", reason: "not a boolean (use true/false, 1/0, yes/no or on/off)"}
	}
	*v.P = b
	return nil
}

// Get formats the field as true or false.
func (v Bool) Get() string { return strconv.FormatBool(*v.P) }

// Kind is "boolean".
func (Bool) Kind() string { return "boolean" }

// Int is a base-10 integer within [Min, Max] (see ParseInt).
type Int[T int | int64] struct {
	P        *T
	Min, Max int64
}

// Set parses raw with ParseInt.
func (v Int[T]) Set(raw string) error {
	n, err := ParseInt(raw, v.Min, v.Max)
	if err != nil {
		return err
	}
	*v.P = T(n)
	return nil
}

// Get formats the field in base 10.
func (v Int[T]) Get() string { return strconv.FormatInt(int64(*v.P), 10) }

// Kind names the type and its bounds.
func (v Int[T]) Kind() string { return "integer" + RangeDoc(v.Min, v.Max) }

// Float is a finite decimal number of at least Min and, when Max > Min, at most Max.
type Float struct {
	P        *float64
	Min, Max float64
}

// Set parses raw as a finite number of at least Min.
func (v Float) Set(raw string) error {
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return &SyntaxError{Kind: "number", reason: "not a number"}
	}
	if f < v.Min {
		return &RangeError{
			Got: strconv.FormatFloat(f, 'g', -1, 64), Min: strconv.FormatFloat(v.Min, 'g', -1, 64),
			reason: fmt.Sprintf("must be at least %g", v.Min),
		}
	}
	if v.Max > v.Min && f > v.Max {
		return &RangeError{
			Got: strconv.FormatFloat(f, 'g', -1, 64), Min: strconv.FormatFloat(v.Min, 'g', -1, 64),
			Max: strconv.FormatFloat(v.Max, 'g', -1, 64), reason: fmt.Sprintf("must be between %g and %g", v.Min, v.Max),
		}
	}
	*v.P = f
	return nil
}

// Get formats the field in its shortest exact form.
func (v Float) Get() string { return strconv.FormatFloat(*v.P, 'g', -1, 64) }

// Kind names the type and its bounds.
func (v Float) Kind() string {
	if v.Max > v.Min {
		return fmt.Sprintf("number between %g and %g", v.Min, v.Max)
	}
	return fmt.Sprintf("number ≥ %g", v.Min)
}

// Text is any string.
type Text struct{ P *string }

// Set stores raw as it is.
func (v Text) Set(raw string) error { *v.P = raw; return nil }

// Get returns the field.
func (v Text) Get() string { return *v.P }

// Kind is "string".
func (Text) Kind() string { return "string" }
