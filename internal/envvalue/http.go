package envvalue

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// MaxHeaderNameLength bounds a configured header name.
const MaxHeaderNameLength = 64

// CheckHeaderName checks a configured HTTP request header name: letters, digits and
// '-', starting with a letter, at most MaxHeaderNameLength bytes, none of reserved
// (canonical names) and none starting with one of prefixes. "Forwarded" and the
// X-Forwarded-* headers are always refused: proxies set them.
func CheckHeaderName(name string, reserved, prefixes []string) error {
	if len(name) > MaxHeaderNameLength {
		return fmt.Errorf("a header name is at most %d characters", MaxHeaderNameLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		switch {
		case letter:
		case i == 0:
			return errors.New("a header name starts with a letter (e.g. X-Queen-Tenant)")
		case (c >= '0' && c <= '9') || c == '-':
		default:
			return errors.New("a header name has only letters, digits and '-' (e.g. X-Queen-Tenant)")
		}
	}
	canonical := http.CanonicalHeaderKey(name)
	for _, h := range reserved {
		if canonical == h {
			return fmt.Errorf("%s is a header the broker or a proxy already uses", h)
		}
	}
	if strings.HasPrefix(canonical, "X-Forwarded-") || canonical == "Forwarded" {
		return fmt.Errorf("%s is a header proxies set", canonical)
	}
	for _, p := range prefixes {
		if strings.HasPrefix(canonical, p) {
			return fmt.Errorf("%s is a header the broker or a proxy already uses (%s*)", canonical, p)
		}
	}
	return nil
}

// TargetSessionAttrs is PG_TARGET_SESSION_ATTRS: the libpq values under which a daemon
// that writes can work. The ones that aim at a standby are refused with the reason,
// Writer (what the daemon writes, e.g. "the broker writes on every push, pop and ack").
type TargetSessionAttrs struct {
	P      *string
	Writer string
}

// Set takes read-write, primary or any, in any case.
func (v TargetSessionAttrs) Set(raw string) error {
	switch w := strings.ToLower(raw); w {
	case "read-write", "primary", "any":
		*v.P = w
		return nil
	case "read-only", "standby", "prefer-standby":
		return fmt.Errorf("%s, so it cannot work on a server that %s selects (a standby or a read-only "+
			"session); use read-write, primary or any", v.Writer, w)
	}
	return errors.New("must be one of read-write, primary, any")
}

// Get returns the field.
func (v TargetSessionAttrs) Get() string { return *v.P }

// Kind names the values.
func (TargetSessionAttrs) Kind() string { return "one of read-write, primary, any" }

// PGSSLMode is the libpq sslmode that PG_USE_SSL (useSSL) and
// PG_SSL_REJECT_UNAUTHORIZED (verify) ask for, the same for both daemons: disable
// without TLS; with it, verify-full (the server's certificate must chain to a trusted
// CA and name the host connected to), or require (encrypted, the server not verified)
// when verify is false.
func PGSSLMode(useSSL, verify bool) string {
	switch {
	case !useSSL:
		return "disable"
	case !verify:
		return "require"
	}
	return "verify-full"
}

// CheckOrigin accepts "*" or a browser origin: http(s)://host[:port] and nothing
// more. A trailing "/", a bare "?" or "#" is refused too: an origin with any of them
// never equals the Origin a browser sends, so it would allow nothing.
func CheckOrigin(o string) error {
	if o == "*" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil || strings.ContainsAny(o, "?#") {
		return fmt.Errorf("%q is not an origin (use * or scheme://host[:port])", o)
	}
	return nil
}
