package envvalue

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// durationSyntax is the error for a raw value that time.ParseDuration refuses.
func durationSyntax() error {
	return &SyntaxError{Kind: "duration", reason: "not a duration (use Go syntax such as 20s or 1m30s)"}
}

// Unit is a whole number of some time unit (Unit: milliseconds or seconds) exposed as
// a time.Duration, from Min to Max units; Max 0 is as many as the unit allows within
// NoMax.
type Unit struct {
	P        *time.Duration
	Unit     time.Duration
	Min, Max int64
}

// Set parses raw with ParseInt, in units.
func (v Unit) Set(raw string) error {
	n, err := ParseInt(raw, v.Min, v.max())
	if err != nil {
		return err
	}
	*v.P = time.Duration(n) * v.Unit
	return nil
}

func (v Unit) max() int64 {
	if v.Max != 0 {
		return v.Max
	}
	return min(NoMax, math.MaxInt64/int64(v.Unit))
}

// Get formats the field as a number of units.
func (v Unit) Get() string { return strconv.FormatInt(int64(*v.P/v.Unit), 10) }

// Kind names the unit and the bounds.
func (v Unit) Kind() string {
	name := "milliseconds"
	if v.Unit == time.Second {
		name = "seconds"
	}
	return name + RangeDoc(v.Min, v.max())
}

// Duration is a Go duration string ("20s", "1m30s") of at least Min.
type Duration struct {
	P   *time.Duration
	Min time.Duration
}

// Set parses raw with time.ParseDuration and checks the bound.
func (v Duration) Set(raw string) error {
	d, err := time.ParseDuration(raw)
	if err != nil {
		return durationSyntax()
	}
	if d < v.Min {
		return &RangeError{Got: d.String(), Min: v.Min.String(), reason: fmt.Sprintf("must be at least %s", v.Min)}
	}
	*v.P = d
	return nil
}

// Get formats the field as a Go duration.
func (v Duration) Get() string { return v.P.String() }

// Kind names the type and its bound.
func (v Duration) Kind() string { return "duration ≥ " + v.Min.String() }

// Limit is a Go duration that is either 0 (no limit) or at least Min: a limit for
// which a tiny value would cut nearly everything.
type Limit struct {
	P   *time.Duration
	Min time.Duration
	// Zero says what 0 means in errors and docs ("no limit" when empty).
	Zero string
}

func (v Limit) zeroMeans() string {
	if v.Zero == "" {
		return "no limit"
	}
	return v.Zero
}

// Set parses raw with time.ParseDuration and checks the bound.
func (v Limit) Set(raw string) error {
	d, err := time.ParseDuration(raw)
	if err != nil {
		return durationSyntax()
	}
	if d != 0 && d < v.Min {
		return &RangeError{
			Got: d.String(), Min: v.Min.String(),
			reason: fmt.Sprintf("must be 0 (%s) or at least %s", v.zeroMeans(), v.Min),
		}
	}
	*v.P = d
	return nil
}

// Get formats the field as a Go duration.
func (v Limit) Get() string { return v.P.String() }

// Kind names the type, what 0 means and the bound.
func (v Limit) Kind() string {
	return "duration, 0 (" + v.zeroMeans() + ") or ≥ " + v.Min.String()
}

// Range is a Go duration from Min to Max inclusive.
type Range struct {
	P        *time.Duration
	Min, Max time.Duration
}

// Set parses raw with time.ParseDuration and checks the bounds.
func (v Range) Set(raw string) error {
	d, err := time.ParseDuration(raw)
	if err != nil {
		return durationSyntax()
	}
	if d < v.Min || d > v.Max {
		return &RangeError{
			Got: d.String(), Min: v.Min.String(), Max: v.Max.String(),
			reason: fmt.Sprintf("must be from %s to %s", v.Min, v.Max),
		}
	}
	*v.P = d
	return nil
}

// Get formats the field as a Go duration.
func (v Range) Get() string { return v.P.String() }

// Kind names the type and its bounds.
func (v Range) Kind() string {
	return "duration from " + v.Min.String() + " to " + v.Max.String()
}
