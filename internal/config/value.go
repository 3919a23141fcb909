package config

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"

	"github.com/queenmq/queen/internal/envvalue"
)

// value binds one Config field to the table: the shared parser's envvalue.Value, with
// the kinds of internal/envvalue and the broker's own below.
type value = envvalue.Value

// resetter is implemented by values whose unset state is not the parse of a default
// string (WEBAPP_ROOT: unset and set-but-empty mean different things).
type resetter = envvalue.Resetter

// gcPercentValue is GOGC: a percentage, or "off" (-1), as the Go runtime reads it.
type gcPercentValue struct{ p *int }

func (v gcPercentValue) Set(raw string) error {
	if raw == "off" {
		*v.p = -1
		return nil
	}
	n, err := envvalue.ParseInt(raw, 1, 100000)
	if err != nil {
		return fmt.Errorf("%w, or off", err)
	}
	*v.p = int(n)
	return nil
}

func (v gcPercentValue) Get() string {
	if *v.p < 0 {
		return "off"
	}
	return strconv.Itoa(*v.p)
}

func (gcPercentValue) Kind() string { return "percent or off" }

// memLimitValue is GOMEMLIMIT: a byte count, or "off" (math.MaxInt64, no limit), as the
// Go runtime reads it. Unlike the runtime it refuses less than 1 MiB, so that a
// forgotten unit ("64" for 64MiB) fails the configuration instead of making the
// collector run without pause.
type memLimitValue struct{ p *int64 }

func (v memLimitValue) Set(raw string) error {
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
func (v memLimitValue) Get() string {
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

func (memLimitValue) Kind() string { return "bytes or off" }

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

// hexKeyValue is a 32-byte key written as exactly 64 hex characters, or empty.
type hexKeyValue struct{ p *[]byte }

func (v hexKeyValue) Set(raw string) error {
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

func (v hexKeyValue) Get() string { return hex.EncodeToString(*v.p) }
func (hexKeyValue) Kind() string  { return "64 hex characters" }

// webappValue is WEBAPP_ROOT: unset serves the embedded dashboard, a path serves that
// directory instead, and set-but-empty turns the dashboard off (as upstream).
type webappValue struct {
	root    *string
	enabled *bool
}

func (v webappValue) Reset() { *v.root, *v.enabled = "", true }

func (v webappValue) Set(raw string) error {
	*v.root, *v.enabled = raw, raw != ""
	return nil
}

func (v webappValue) Get() string { return *v.root }
func (webappValue) Kind() string  { return "directory path" }

// hostValue is HOST: an IP address (IPv6 without brackets, with an optional zone) or a
// host name. A dotted name whose last label is a number (999.1.1.1) is neither an
// address nor a name, so it is refused here rather than by the resolver when the
// daemon binds.
type hostValue struct{ p *string }

func (v hostValue) Set(raw string) error {
	if err := checkHost(raw); err != nil {
		return err
	}
	*v.p = raw
	return nil
}

func (v hostValue) Get() string { return *v.p }
func (hostValue) Kind() string  { return "IP address or host name" }

func checkHost(s string) error {
	if addr, zone, ok := strings.Cut(s, "%"); ok {
		if ip := net.ParseIP(addr); ip == nil || ip.To4() != nil || zone == "" {
			return errors.New("a zone (%) needs an IPv6 address before it and a name after it")
		}
		return nil
	}
	if net.ParseIP(s) != nil {
		return nil
	}
	if strings.HasPrefix(s, "[") {
		return errors.New("write an IPv6 address without brackets")
	}
	if len(s) > 253 {
		return errors.New("not an IP address, and longer than a host name may be (253 characters)")
	}
	labels := strings.Split(strings.TrimSuffix(s, "."), ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' ||
			strings.IndexFunc(l, func(r rune) bool { return !isHostNameRune(r) }) >= 0 {
			return fmt.Errorf("not an IP address, nor a host name (label %q: letters, digits, inner hyphens and "+
				"underscores, 1–63 of them)", l)
		}
	}
	if last := labels[len(labels)-1]; strings.IndexFunc(last, func(r rune) bool { return r < '0' || r > '9' }) < 0 {
		return errors.New("not an IP address, nor a host name (its last label is a number)")
	}
	return nil
}

func isHostNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}
