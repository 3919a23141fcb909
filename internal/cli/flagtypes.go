package cli

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// unitValue is an integer flag in a wire unit (seconds, milliseconds) that also
// takes a Go duration: --lease-time 300 and --lease-time 5m are the same.
type unitValue struct {
	v    *int
	unit time.Duration
}

// unitVar registers a [unitValue] flag.
func unitVar(fs *flag.FlagSet, p *int, name string, unit time.Duration, usage string) {
	fs.Var(&unitValue{v: p, unit: unit}, name, usage)
}

// String implements flag.Value.
func (u *unitValue) String() string {
	if u == nil || u.v == nil {
		return "0"
	}
	return strconv.Itoa(*u.v)
}

// Set implements flag.Value.
func (u *unitValue) Set(s string) error {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 {
			return fmt.Errorf("must not be negative")
		}
		*u.v = n
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("want a non-negative integer or a duration such as 90s or 5m")
	}
	*u.v = int(d / u.unit)
	return nil
}

// funcValue is a flag whose Set is a function (ordered, repeatable operations).
type funcValue func(string) error

// String implements flag.Value.
func (f funcValue) String() string { return "" }

// Set implements flag.Value.
func (f funcValue) Set(s string) error { return f(s) }

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// alias registers short as a one-letter alias of the already registered long flag.
func alias(fs *flag.FlagSet, short, long string) {
	fs.Var(fs.Lookup(long).Value, short, "")
}

// parseTime reads a time given on the command line: RFC 3339
// (2026-04-26T10:00:00Z), a date (2026-04-26, midnight UTC), "now", or a duration
// meaning that long ago ("15m", "2h", "-2h"). now is the reference for the relative
// forms.
func parseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "now":
		return now, nil
	case "":
		return time.Time{}, fmt.Errorf("empty time")
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02T15:04:05", s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(strings.TrimPrefix(s, "-")); err == nil {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: want RFC 3339 (2026-04-26T10:00:00Z), a date, \"now\" or a duration ago (15m, 2h)", s)
}

// wireTime formats t for a query parameter or body (RFC 3339, UTC, milliseconds).
func wireTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// timeFlag converts an optional --from/--to flag value into its wire form ("" stays
// "").
func timeFlag(name, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	t, err := parseTime(s, time.Now())
	if err != nil {
		return "", usagef("--%s: %v", name, err)
	}
	return wireTime(t), nil
}
