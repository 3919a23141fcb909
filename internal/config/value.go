package config

import (
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// value binds one Config field to the table, much like flag.Value: set parses a raw
// environment value into the field (leaving the field untouched on error), get formats
// the field back in the variable's own units, and kind names the type for the docs.
type value interface {
	set(raw string) error
	get() string
	kind() string
}

// resetter is implemented by values whose unset state is not the parse of a default
// string (WEBAPP_ROOT: unset and set-but-empty mean different things).
type resetter interface {
	reset()
}

// noMax is the upper bound of integer settings that have no natural one. It keeps
// every int setting inside 32 bits, so nothing overflows on any platform.
const noMax = math.MaxInt32

// boolValue is a boolean in systemd's vocabulary (see parseBool).
type boolValue struct{ p *bool }

func (v boolValue) set(raw string) error {
	b, ok := parseBool(raw)
	if !ok {
		return errors.New("not a boolean (use true/false, 1/0, yes/no or on/off)")
	}
	*v.p = b
	return nil
}

func (v boolValue) get() string { return strconv.FormatBool(*v.p) }
func (boolValue) kind() string  { return "boolean" }

// parseBool accepts true/false, 1/0, yes/no and on/off in any case, and nothing else:
// "ture", "enabled" or "yes # comment" are errors, never false.
func parseBool(s string) (b, ok bool) {
	switch strings.ToLower(s) {
	case "true", "1", "yes", "on":
		return true, true
	case "false", "0", "no", "off":
		return false, true
	}
	return false, false
}

// intValue is a base-10 integer within [min, max].
type intValue[T int | int64] struct {
	p        *T
	min, max int64
}

func (v intValue[T]) set(raw string) error {
	n, err := parseInt(raw, v.min, v.max)
	if err != nil {
		return err
	}
	*v.p = T(n)
	return nil
}

func (v intValue[T]) get() string  { return strconv.FormatInt(int64(*v.p), 10) }
func (v intValue[T]) kind() string { return "integer" + rangeDoc(v.min, v.max) }

// parseInt parses a whole base-10 integer: no spaces, no numeric prefix ("12abc" is an
// error, not 12), no silent 0.
func parseInt(raw string, min, max int64) (int64, error) {
	n, err := strconv.ParseInt(raw, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, errors.New("integer out of range")
	case err != nil:
		return 0, errors.New("not an integer")
	case n < min || n > max:
		return 0, errors.New("must be" + rangeDoc(min, max))
	}
	return n, nil
}

// rangeDoc describes [min, max] for messages and docs, e.g. " between 1 and 65535".
func rangeDoc(min, max int64) string {
	if max >= noMax {
		return fmt.Sprintf(" ≥ %d", min)
	}
	return fmt.Sprintf(" between %d and %d", min, max)
}

// unitValue is a whole number of some time unit (milliseconds or seconds, as upstream
// names it) exposed as a time.Duration.
type unitValue struct {
	p    *time.Duration
	unit time.Duration
	min  int64
}

func (v unitValue) set(raw string) error {
	n, err := parseInt(raw, v.min, v.max())
	if err != nil {
		return err
	}
	*v.p = time.Duration(n) * v.unit
	return nil
}

func (v unitValue) max() int64 {
	return min(noMax, math.MaxInt64/int64(v.unit))
}

func (v unitValue) get() string { return strconv.FormatInt(int64(*v.p/v.unit), 10) }

func (v unitValue) kind() string {
	name := "milliseconds"
	if v.unit == time.Second {
		name = "seconds"
	}
	return name + rangeDoc(v.min, v.max())
}

// durationValue is a Go duration string ("20s", "1m30s") of at least min.
type durationValue struct {
	p   *time.Duration
	min time.Duration
}

func (v durationValue) set(raw string) error {
	d, err := time.ParseDuration(raw)
	if err != nil {
		return errors.New("not a duration (use Go syntax such as 20s or 1m30s)")
	}
	if d < v.min {
		return fmt.Errorf("must be at least %s", v.min)
	}
	*v.p = d
	return nil
}

func (v durationValue) get() string  { return v.p.String() }
func (v durationValue) kind() string { return "duration ≥ " + v.min.String() }

// limitValue is a Go duration that is either 0 (no limit) or at least min: a limit for
// which a tiny value would cut nearly everything.
type limitValue struct {
	p   *time.Duration
	min time.Duration
	// zero says what 0 means in errors and docs ("no limit" when empty).
	zero string
}

func (v limitValue) zeroMeans() string {
	if v.zero == "" {
		return "no limit"
	}
	return v.zero
}

func (v limitValue) set(raw string) error {
	d, err := time.ParseDuration(raw)
	if err != nil {
		return errors.New("not a duration (use Go syntax such as 20s or 1m30s)")
	}
	if d != 0 && d < v.min {
		return fmt.Errorf("must be 0 (%s) or at least %s", v.zeroMeans(), v.min)
	}
	*v.p = d
	return nil
}

func (v limitValue) get() string { return v.p.String() }
func (v limitValue) kind() string {
	return "duration, 0 (" + v.zeroMeans() + ") or ≥ " + v.min.String()
}

// floatValue is a finite decimal number of at least min.
type floatValue struct {
	p   *float64
	min float64
}

func (v floatValue) set(raw string) error {
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return errors.New("not a number")
	}
	if f < v.min {
		return fmt.Errorf("must be at least %g", v.min)
	}
	*v.p = f
	return nil
}

func (v floatValue) get() string  { return strconv.FormatFloat(*v.p, 'g', -1, 64) }
func (v floatValue) kind() string { return fmt.Sprintf("number ≥ %g", v.min) }

// textValue is any string.
type textValue struct{ p *string }

func (v textValue) set(raw string) error { *v.p = raw; return nil }
func (v textValue) get() string          { return *v.p }
func (textValue) kind() string           { return "string" }

// enumValue is one word of a closed set, matched in any case and stored in its
// canonical spelling; each alias pair maps an extra spelling onto a canonical one.
type enumValue struct {
	p       *string
	options []string
	aliases [][2]string
}

func (v enumValue) set(raw string) error {
	for _, o := range v.options {
		if strings.EqualFold(raw, o) {
			*v.p = o
			return nil
		}
	}
	for _, a := range v.aliases {
		if strings.EqualFold(raw, a[0]) {
			*v.p = a[1]
			return nil
		}
	}
	return errors.New("must be one of " + v.words())
}

func (v enumValue) get() string  { return *v.p }
func (v enumValue) kind() string { return "one of " + v.words() }

func (v enumValue) words() string {
	var ws []string
	for _, o := range v.options {
		if o != "" {
			ws = append(ws, o)
		}
	}
	for _, a := range v.aliases {
		ws = append(ws, a[0])
	}
	return strings.Join(ws, ", ")
}

// listValue is a comma-separated list; entries are trimmed and empty entries dropped.
// check, when set, validates each entry.
type listValue struct {
	p     *[]string
	check func(string) error
}

func (v listValue) set(raw string) error {
	var out []string
	for _, e := range strings.Split(raw, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if v.check != nil {
			if err := v.check(e); err != nil {
				return err
			}
		}
		out = append(out, e)
	}
	*v.p = out
	return nil
}

func (v listValue) get() string { return strings.Join(*v.p, ",") }
func (listValue) kind() string  { return "comma-separated list" }

// checkOrigin accepts "*" or a browser origin: http(s)://host[:port], nothing more.
func checkOrigin(o string) error {
	if o == "*" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q is not an origin (use * or scheme://host[:port])", o)
	}
	return nil
}

// hostPortValue is a listen address, host:port with a numeric port (1–65535) and any
// host (empty: every interface), or empty.
type hostPortValue struct{ p *string }

func (v hostPortValue) set(raw string) error {
	if raw != "" {
		_, port, err := net.SplitHostPort(raw)
		if err != nil {
			return errors.New("not a host:port address (e.g. 127.0.0.1:6060)")
		}
		if _, err := parseInt(port, 1, 65535); err != nil {
			return fmt.Errorf("port %q: %w", port, err)
		}
	}
	*v.p = raw
	return nil
}

func (v hostPortValue) get() string { return *v.p }
func (hostPortValue) kind() string  { return "host:port" }

// gcPercentValue is GOGC: a percentage, or "off" (-1), as the Go runtime reads it.
type gcPercentValue struct{ p *int }

func (v gcPercentValue) set(raw string) error {
	if raw == "off" {
		*v.p = -1
		return nil
	}
	n, err := parseInt(raw, 1, 100000)
	if err != nil {
		return fmt.Errorf("%w, or off", err)
	}
	*v.p = int(n)
	return nil
}

func (v gcPercentValue) get() string {
	if *v.p < 0 {
		return "off"
	}
	return strconv.Itoa(*v.p)
}

func (gcPercentValue) kind() string { return "percent or off" }

// memLimitValue is GOMEMLIMIT: a byte count, or "off" (math.MaxInt64, no limit), as the
// Go runtime reads it. Unlike the runtime it refuses less than 1 MiB, so that a
// forgotten unit ("64" for 64MiB) fails the configuration instead of making the
// collector run without pause.
type memLimitValue struct{ p *int64 }

func (v memLimitValue) set(raw string) error {
	if raw == "off" {
		*v.p = math.MaxInt64
		return nil
	}
	n, err := parseByteCount(raw)
	if err != nil {
		return err
	}
	if n < 1<<20 {
		return errors.New("must be at least 1MiB")
	}
	*v.p = n
	return nil
}

// get prints the largest unit that divides the value exactly: 24MiB, not 25165824.
func (v memLimitValue) get() string {
	n := *v.p
	if n == math.MaxInt64 {
		return "off"
	}
	units := [...]string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for ; i < len(units)-1 && n != 0 && n%1024 == 0; i++ {
		n /= 1024
	}
	return strconv.FormatInt(n, 10) + units[i]
}

func (memLimitValue) kind() string { return "bytes or off" }

// parseByteCount reads the runtime's byte counts (runtime/debug.SetMemoryLimit): whole
// digits, then nothing, B, KiB, MiB, GiB or TiB. KB, MB and spaces are errors, there
// as here.
func parseByteCount(raw string) (int64, error) {
	digits, shift := strings.TrimSuffix(raw, "B"), 0
	for i, unit := range [...]string{"KiB", "MiB", "GiB", "TiB"} {
		if d, ok := strings.CutSuffix(raw, unit); ok {
			digits, shift = d, 10*(i+1)
			break
		}
	}
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, errors.New("not a byte count (e.g. 64MiB, 1GiB, or off)")
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > math.MaxInt64>>shift {
		return 0, errors.New("byte count out of range")
	}
	return n << shift, nil
}

// urlValue is an http or https URL, or empty.
type urlValue struct{ p *string }

func (v urlValue) set(raw string) error {
	if raw != "" {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("not an http or https URL")
		}
	}
	*v.p = raw
	return nil
}

func (v urlValue) get() string { return *v.p }
func (urlValue) kind() string  { return "URL" }

// pemValue is a PEM block, or empty. Env files cannot hold newlines, so a value with
// literal `\n` sequences and no real newline has them turned into newlines.
type pemValue struct{ p *string }

func (v pemValue) set(raw string) error {
	if raw != "" {
		if !strings.Contains(raw, "\n") {
			raw = strings.ReplaceAll(raw, `\n`, "\n")
		}
		if b, _ := pem.Decode([]byte(raw)); b == nil {
			return errors.New("not a PEM block (-----BEGIN ...)")
		}
	}
	*v.p = raw
	return nil
}

func (v pemValue) get() string { return *v.p }
func (pemValue) kind() string  { return "PEM" }

// hexKeyValue is a 32-byte key written as exactly 64 hex characters, or empty.
type hexKeyValue struct{ p *[]byte }

func (v hexKeyValue) set(raw string) error {
	if raw == "" {
		*v.p = nil
		return nil
	}
	if len(raw) != 64 {
		return fmt.Errorf("must be exactly 64 hex characters (32 bytes), got %d characters", len(raw))
	}
	key, err := hex.DecodeString(raw)
	if err != nil {
		return errors.New("not hexadecimal")
	}
	*v.p = key
	return nil
}

func (v hexKeyValue) get() string { return hex.EncodeToString(*v.p) }
func (hexKeyValue) kind() string  { return "64 hex characters" }

// webappValue is WEBAPP_ROOT: unset serves the embedded dashboard, a path serves that
// directory instead, and set-but-empty turns the dashboard off (as upstream).
type webappValue struct {
	root    *string
	enabled *bool
}

func (v webappValue) reset() { *v.root, *v.enabled = "", true }

func (v webappValue) set(raw string) error {
	*v.root, *v.enabled = raw, raw != ""
	return nil
}

func (v webappValue) get() string { return *v.root }
func (webappValue) kind() string  { return "directory path" }
