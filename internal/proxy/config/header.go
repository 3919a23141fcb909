package config

import (
	"errors"

	"github.com/queenmq/queen/internal/envvalue"
)

// The proxy's rules for QUEEN_TENANCY_HEADER and the origins of CORS: those of the
// brokers (internal/envvalue), which the proxy must name and whose refusals it must
// share, and more.

// tenancyHeader1x is the header the Queen 1.x boolean form selects (true).
const tenancyHeader1x = "X-Queen-Tenant"

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
var reservedPrefixes = []string{"Sec-", "Proxy-", "If-", "Access-Control-"}

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
	if err := envvalue.CheckHeaderName(v, reservedHeaders, reservedPrefixes); err != nil {
		return "", err
	}
	return v, nil
}
