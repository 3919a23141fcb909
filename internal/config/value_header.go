package config

import "github.com/queenmq/queen/internal/envvalue"

// reservedHeaders are the request headers a tenancy header must not reuse: the
// broker reads them for other purposes, or proxies set them themselves. queen-proxy
// refuses them too, and more (its own list).
var reservedHeaders = []string{
	"Authorization", "Cookie", "Host", "Content-Type", "Content-Length", "Content-Encoding",
	"Transfer-Encoding", "Connection", "Accept", "Origin", "X-Request-Id",
}

// TenancyHeader1x is the tenant header of the Queen 1.x brokers, which
// QUEEN_TENANCY_HEADER=true selects.
const TenancyHeader1x = "X-Queen-Tenant"

// tenancyHeaderValue is QUEEN_TENANCY_HEADER: either a boolean in the strict spellings
// of envvalue.ParseBool, as the Queen 1.x brokers read it (true: tenancy on with
// TenancyHeader1x; false: off), or an HTTP request header name (letters, digits and
// '-', starting with a letter, at most 64 bytes) that is not one of reservedHeaders
// nor an X-Forwarded-* header. No header name is a boolean spelling (a name starts
// with a letter and none of them is one), so the two readings never overlap. Empty is
// allowed and means unset.
type tenancyHeaderValue struct{ p *string }

func (v tenancyHeaderValue) Set(raw string) error {
	if on, isBool := envvalue.ParseBool(raw); isBool && raw != "" {
		*v.p = ""
		if on {
			*v.p = TenancyHeader1x
		}
		return nil
	}
	if raw != "" {
		if err := checkHeaderName(raw); err != nil {
			return err
		}
	}
	*v.p = raw
	return nil
}

func (v tenancyHeaderValue) Get() string { return *v.p }
func (tenancyHeaderValue) Kind() string  { return "boolean or header name" }

func checkHeaderName(name string) error {
	return envvalue.CheckHeaderName(name, reservedHeaders, nil)
}
