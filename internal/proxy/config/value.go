package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// parseBool accepts systemd's booleans in any case and nothing else.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean (use true/false, 1/0, yes/no or on/off)", s)
}

func parseInt(s string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d is outside %d..%d", n, lo, hi)
	}
	return n, nil
}

func parseDuration(s string, lo, hi time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (e.g. 500ms, 2s, 1m)", s)
	}
	if d < lo || d > hi {
		return 0, fmt.Errorf("%s is outside %s..%s", d, lo, hi)
	}
	return d, nil
}

// parseMillis reads a number of milliseconds, the broker's unit for DB_* timeouts.
func parseMillis(s string) (time.Duration, error) {
	n, err := parseInt(s, 1, 3_600_000)
	return time.Duration(n) * time.Millisecond, err
}

// parseUpstreams reads a comma list of 1–16 http(s) URLs without query or fragment.
func parseUpstreams(s string) ([]*url.URL, error) {
	var out []*url.URL
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		u, err := url.Parse(part)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return nil, fmt.Errorf("%q is not an http:// or https:// URL of a broker", part)
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		out = append(out, u)
	}
	if len(out) == 0 || len(out) > 16 {
		return nil, fmt.Errorf("give 1 to 16 broker URLs, not %d", len(out))
	}
	return out, nil
}

// validHeaderName reports an HTTP token (RFC 9110), the form of a header name.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
			return false
		}
	}
	return true
}
