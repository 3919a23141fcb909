package gateway

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// The client address behind trusted proxies is read from every X-Forwarded-For line,
// in order, from the right: a client that sends a line of its own ahead of the load
// balancer's cannot choose the address its failures count against.
func TestClientIPReadsEveryForwardedLine(t *testing.T) {
	t.Parallel()
	s := &Server{opts: Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}}
	for _, tc := range []struct {
		name  string
		peer  string
		lines []string
		want  string
		chain string // the X-Forwarded-For sent to the broker
	}{
		{"UntrustedPeer", "192.0.2.7:4000", []string{"198.51.100.1"}, "192.0.2.7", "192.0.2.7"},
		{"OneLine", "10.0.0.1:4000", []string{"198.51.100.1"}, "198.51.100.1", "198.51.100.1, 10.0.0.1"},
		{"ClientLineFirst", "10.0.0.1:4000", []string{"203.0.113.66", "198.51.100.1"}, "198.51.100.1",
			"203.0.113.66, 198.51.100.1, 10.0.0.1"},
		{"ClientHopsFirst", "10.0.0.1:4000", []string{"203.0.113.66, 203.0.113.67", "198.51.100.1, 10.0.0.2"},
			"198.51.100.1", "203.0.113.66, 203.0.113.67, 198.51.100.1, 10.0.0.2, 10.0.0.1"},
		{"StopsAtAnInvalidHop", "10.0.0.1:4000", []string{"203.0.113.66, not-an-address, 10.0.0.2"}, "10.0.0.2",
			"203.0.113.66, not-an-address, 10.0.0.2, 10.0.0.1"},
		{"EmptyHopIsInvalid", "10.0.0.1:4000", []string{"203.0.113.66,,10.0.0.2"}, "10.0.0.2",
			"203.0.113.66, , 10.0.0.2, 10.0.0.1"},
		{"MappedAndPorted", "10.0.0.1:4000", []string{"[::ffff:198.51.100.1]:5000"}, "198.51.100.1",
			"[::ffff:198.51.100.1]:5000, 10.0.0.1"},
		{"AllTrusted", "10.0.0.1:4000", []string{"10.0.0.3", "10.0.0.2"}, "10.0.0.3", "10.0.0.3, 10.0.0.2, 10.0.0.1"},
		{"NoHeader", "10.0.0.1:4000", nil, "10.0.0.1", "10.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/api/v1/push", nil)
			r.RemoteAddr = tc.peer
			for _, l := range tc.lines {
				r.Header.Add("X-Forwarded-For", l)
			}
			require.Equal(t, tc.want, s.clientIP(r))
			out := httptest.NewRequest(http.MethodGet, "/", nil)
			s.setForwarded(out, r)
			require.Equal(t, []string{tc.chain}, out.Header.Values("X-Forwarded-For"))
		})
	}
}
