package gateway

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/queenmq/queen/internal/api"
)

// A broker's tenancy changes only when it restarts, and a restart ends every
// connection to the old process. So the transport that carries requests to the
// brokers asks each new connection, before its first request and on that very
// connection, whether the broker at the other end scopes by the proxy's tenancy
// header: a broker restarted with tenancy off between two health checks never gets a
// tenant's request in global scope, whatever the check interval.

// connCheckTimeout bounds the tenancy question asked on a new connection.
const connCheckTimeout = checkTimeout

// maxTenancyAnswer bounds the tenancy answer read on a new connection.
const maxTenancyAnswer = 64 << 10

// tenancyOffError is a new connection whose broker answered its tenancy question 200
// with tenancy off or another header: the broker is misconfigured.
type tenancyOffError struct {
	info api.Tenancy
	want string
}

func (e *tenancyOffError) Error() string {
	if !e.info.Enabled {
		return "the broker has tenancy off"
	}
	return fmt.Sprintf("the broker scopes by %s, not %s", e.info.Header, e.want)
}

// connCheckError is a new connection whose tenancy could not be confirmed: nothing
// of a request was written on it, so the request may go to another broker.
type connCheckError struct{ err error }

func (e *connCheckError) Error() string { return "broker tenancy check: " + e.err.Error() }
func (e *connCheckError) Unwrap() error { return e.err }

// NewTransport returns a connection pool to the brokers whose every new connection
// is checked first (see above): it carries a request only once the broker said on it
// that it scopes by header. authorize sets the proxy's own credential on that
// question (nil sends none). A connection that fails the check is closed and its
// dial fails with a *connCheckError (wrapping a *tenancyOffError when the broker
// answered with tenancy off or another header).
func NewTransport(header string, authorize func(*http.Request) error) *http.Transport {
	c := &connChecker{dialer: &net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second},
		header: header, authorize: authorize}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           c.dial,
		DialTLSContext:        c.dialTLS,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0, // pops park; the request context bounds every call
		DisableCompression:    true,
	}
}

// newProbeTransport is the connection pool of the health and tenancy probes, which
// must reach a broker whatever its tenancy to tell misconfigured from down.
func newProbeTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}

// connChecker dials brokers and checks each new connection's tenancy.
type connChecker struct {
	dialer    *net.Dialer
	header    string
	authorize func(*http.Request) error
}

// dial is DialContext for http:// brokers.
func (c *connChecker) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := c.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if err := c.check(ctx, conn, "http://"+addr); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// dialTLS is DialTLSContext for https:// brokers: the TLS handshake the transport
// would make (the host's name verified against the system's roots), then the check.
func (c *connChecker) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	raw, err := c.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		_ = raw.Close()
		return nil, err
	}
	conn := tls.Client(raw, &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12})
	if err := conn.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, err
	}
	if err := c.check(ctx, conn, "https://"+addr); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// check asks the broker at the other end of conn for its tenancy, on conn, and
// leaves conn ready for the transport's first request.
func (c *connChecker) check(ctx context.Context, conn net.Conn, base string) error {
	deadline := time.Now().Add(connCheckTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return &connCheckError{err: err}
	}
	info, err := c.ask(ctx, conn, base)
	if err != nil {
		return &connCheckError{err: err}
	}
	if !tenancyMatches(info, c.header) {
		return &connCheckError{err: &tenancyOffError{info: info, want: c.header}}
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		return &connCheckError{err: err}
	}
	return nil
}

// ask writes GET /internal/api/tenancy on conn and reads the whole answer, which
// must leave the connection open with nothing more to read.
func (c *connChecker) ask(ctx context.Context, conn net.Conn, base string) (api.Tenancy, error) {
	var info api.Tenancy
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+tenancyPath, nil)
	if err != nil {
		return info, err
	}
	if c.authorize != nil {
		if err := c.authorize(req); err != nil {
			return info, err
		}
	}
	if err := req.Write(conn); err != nil {
		return info, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return info, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTenancyAnswer+1))
	_ = resp.Body.Close()
	switch {
	case err != nil:
		return info, err
	case len(body) > maxTenancyAnswer:
		return info, errors.New("tenancy answer too large")
	case resp.StatusCode != http.StatusOK:
		return info, &statusError{status: resp.StatusCode}
	case resp.Close || br.Buffered() > 0:
		return info, errors.New("the broker did not keep the connection open after its tenancy answer")
	}
	if err := json.Unmarshal(body, &info); err != nil {
		return info, fmt.Errorf("tenancy answer: %w", err)
	}
	return info, nil
}
