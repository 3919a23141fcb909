package config

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/queenmq/queen/internal/envvalue"
)

// The broker's rules for QUEEN_TENANCY_HEADER and for the origins of CORS, which
// package config of the broker keeps to itself, written again here: the proxy must
// name the brokers' header, and refuse what they refuse.

// tenancyHeader1x is the header the Queen 1.x boolean form selects (true).
const tenancyHeader1x = "X-Queen-Tenant"

// maxHeaderNameLength bounds the tenancy header's name, as the broker does.
const maxHeaderNameLength = 64

// reservedHeaders are the headers a tenancy header must not be: the broker's list (it
// reads them for other purposes, or proxies set them), the proxy's own (sent to the
// brokers, or read from clients) and what browsers and HTTP clients send on their own,
// which the proxy would refuse as a client's tenancy header on every request.
var reservedHeaders = []string{
	"Authorization", "Cookie", "Host", "Content-Type", "Content-Length", "Content-Encoding",
	"Transfer-Encoding", "Connection", "Accept", "Origin", "X-Request-Id",
	"X-Queen-Cell", "X-Proxy-User", "X-Proxy-Role", "Traceparent", "Tracestate",
	"User-Agent", "Accept-Encoding", "Accept-Language", "Referer", "Cache-Control", "Pragma",
	"Expect", "Te", "Trailer", "Upgrade", "Keep-Alive", "Range", "Priority",
}

// reservedPrefixes are header families a tenancy header must not join.
var reservedPrefixes = []string{"X-Forwarded-", "Sec-", "Proxy-", "If-", "Access-Control-"}

// tenancyHeaderValue reads QUEEN_TENANCY_HEADER as the broker does: a header name of
// letters, digits and '-', starting with a letter, at most 64 bytes, and none the
// broker or the proxy already uses; or the 1.x boolean form, whose true is
// X-Queen-Tenant. Its false turns tenancy off, which the proxy cannot work with.
func tenancyHeaderValue(v string) (string, error) {
	if on, isBool := envvalue.ParseBool(v); isBool {
		if !on {
			return "", errors.New("tenancy cannot be off behind the proxy: give the brokers' QUEEN_TENANCY_HEADER")
		}
		return tenancyHeader1x, nil
	}
	if len(v) > maxHeaderNameLength {
		return "", fmt.Errorf("a header name is at most %d characters", maxHeaderNameLength)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		letter := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		switch {
		case letter:
		case i == 0:
			return "", fmt.Errorf("%q is not a header name: it starts with a letter (e.g. X-Queen-Tenant)", v)
		case (c >= '0' && c <= '9') || c == '-':
		default:
			return "", fmt.Errorf("%q is not a header name: letters, digits and '-' only (e.g. X-Queen-Tenant)", v)
		}
	}
	canonical := http.CanonicalHeaderKey(v)
	for _, h := range reservedHeaders {
		if canonical == h {
			return "", fmt.Errorf("%s is a header the broker or a proxy already uses", h)
		}
	}
	if canonical == "Forwarded" {
		return "", fmt.Errorf("%s is a header proxies set", canonical)
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(canonical, p) {
			return "", fmt.Errorf("%s is a header the broker or a proxy already uses (%s*)", canonical, p)
		}
	}
	return v, nil
}

// checkOrigin accepts "*" or a browser origin, scheme://host[:port] with scheme http
// or https and nothing more: an origin with a path (even "/") never equals the Origin
// a browser sends.
func checkOrigin(o string) error {
	if o == "*" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.HasSuffix(o, "#") || u.User != nil {
		return fmt.Errorf("%q is not an origin (use * or scheme://host[:port])", o)
	}
	return nil
}
