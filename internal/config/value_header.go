package config

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/queenmq/queen/internal/envvalue"
)

// maxHeaderNameLength bounds a configured header name.
const maxHeaderNameLength = 64

// reservedHeaders are the request headers a tenancy header must not reuse: the
// broker reads them for other purposes, or proxies set them themselves.
var reservedHeaders = []string{
	"Authorization", "Cookie", "Host", "Content-Type", "Content-Length", "Content-Encoding",
	"Transfer-Encoding", "Connection", "Accept", "Origin", "X-Request-Id",
}

// headerNameValue is an HTTP request header name (letters, digits and '-', starting
// with a letter, at most 64 bytes) that is not one of reservedHeaders nor an
// X-Forwarded-* header; empty is allowed and means unset.
type headerNameValue struct{ p *string }

func (v headerNameValue) Set(raw string) error {
	if _, isBool := envvalue.ParseBool(raw); isBool && raw != "" {
		// The Queen 1.x brokers read QUEEN_TENANCY_HEADER as a boolean; here it names a
		// header, and a header called "true" (or "false", which would turn tenancy on)
		// is never what such an env file means.
		return fmt.Errorf("%q is a boolean, but this setting names a header (e.g. X-Queen-Tenant); "+
			"the Queen 1.x boolean form is not supported (docs/multi-tenant.md)", raw)
	}
	if raw != "" {
		if err := checkHeaderName(raw); err != nil {
			return err
		}
	}
	*v.p = raw
	return nil
}

func (v headerNameValue) Get() string { return *v.p }
func (headerNameValue) Kind() string  { return "header name" }

func checkHeaderName(name string) error {
	if len(name) > maxHeaderNameLength {
		return fmt.Errorf("a header name is at most %d characters", maxHeaderNameLength)
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
	for _, h := range reservedHeaders {
		if canonical == h {
			return fmt.Errorf("%s is a header the broker or a proxy already uses", h)
		}
	}
	if strings.HasPrefix(canonical, "X-Forwarded-") || canonical == "Forwarded" {
		return fmt.Errorf("%s is a header proxies set", canonical)
	}
	return nil
}
