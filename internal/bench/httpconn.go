package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// requestTimeout bounds one request of the load generator, its answer included.
const requestTimeout = 2 * time.Minute

// connPool sends HTTP/1.1 requests to one server over keep-alive connections, each
// request written and its answer read in the caller's goroutine, one request at a
// time per connection.
//
// net/http's Transport runs two goroutines per connection and hands every request
// and answer between them and the caller: on a two-core machine shared with the
// broker and PostgreSQL, those hand-offs were most of the load generator's CPU (a
// `perf` profile of a push_b1 window: the scheduler and futex wake-ups around
// persistConn's read and write loops). The wire format stays net/http's own: answers
// are parsed by http.ReadResponse (chunked bodies, Connection: close).
type connPool struct {
	addr   string      // host:port to dial
	host   string      // the Host header
	prefix string      // the base URL's path, prepended to every request's
	tls    *tls.Config // nil: plain HTTP
	dialer net.Dialer

	mu   sync.Mutex
	idle []*httpConn
}

func newConnPool(base string) (*connPool, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("broker URL %q: %w", base, err)
	}
	p := &connPool{host: u.Host, prefix: u.EscapedPath()}
	port := u.Port()
	switch u.Scheme {
	case "http":
		if port == "" {
			port = "80"
		}
	case "https":
		if port == "" {
			port = "443"
		}
		p.tls = &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
	default:
		return nil, fmt.Errorf("broker URL %q: scheme must be http or https", base)
	}
	p.addr = net.JoinHostPort(u.Hostname(), port)
	return p, nil
}

// httpConn is one keep-alive connection and its buffers.
type httpConn struct {
	conn     net.Conn
	counted  *countingReader
	br       *bufio.Reader
	wbuf     []byte
	deadline time.Time // the connection's current deadline
	used     bool      // an answer was read on it before
}

// countingReader counts the bytes read from the connection, so that a failure can
// tell whether the server answered anything.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (p *connPool) get(ctx context.Context) (*httpConn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	conn, err := p.dialer.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	if p.tls != nil {
		tc := tls.Client(conn, p.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return nil, err
		}
		conn = tc
	}
	counted := &countingReader{r: conn}
	return &httpConn{conn: conn, counted: counted, br: bufio.NewReaderSize(counted, 32<<10)}, nil
}

func (p *connPool) put(c *httpConn) {
	p.mu.Lock()
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

// closeIdle closes the connections not in use.
func (p *connPool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		_ = c.conn.Close()
	}
}

// do sends one request and reads the answer's body into buf (reset first). A request
// on a reused connection that the server had closed (it answered nothing) is sent
// once more on a new one, as net/http's Transport does: the server may close an idle
// connection at any time. Cancelling ctx aborts a request in flight.
func (p *connPool) do(ctx context.Context, method, path, auth string, body []byte, buf *bytes.Buffer) (int, error) {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		c, err := p.get(ctx)
		if err != nil {
			return 0, err
		}
		status, keep, err := p.roundTrip(ctx, c, method, path, auth, body, buf)
		if err == nil {
			if keep {
				p.put(c)
			} else {
				_ = c.conn.Close()
			}
			return status, nil
		}
		_ = c.conn.Close()
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if attempt > 0 || !c.used || c.counted.n > 0 {
			return 0, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
}

// roundTrip writes the request on c and reads its answer. keep reports whether c
// may carry another request.
func (p *connPool) roundTrip(ctx context.Context, c *httpConn, method, path, auth string, body []byte, buf *bytes.Buffer) (status int, keep bool, err error) {
	now := time.Now()
	if c.deadline.Sub(now) < requestTimeout/2 { // moved only now and then: each move is a timer change
		c.deadline = now.Add(requestTimeout)
		if err := c.conn.SetDeadline(c.deadline); err != nil {
			return 0, false, err
		}
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
		defer func() {
			if !stop() { // cancelled: the connection's deadline is gone
				status, keep, err = 0, false, ctx.Err()
			}
		}()
	}
	c.counted.n = 0
	c.wbuf = appendRequest(c.wbuf[:0], method, p.prefix+path, p.host, auth, body)
	if _, err := c.conn.Write(c.wbuf); err != nil {
		return 0, false, err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return 0, false, err
	}
	buf.Reset()
	_, err = buf.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return resp.StatusCode, false, fmt.Errorf("read answer: %w", err)
	}
	c.used = true
	return resp.StatusCode, !resp.Close, nil
}

// appendRequest appends an HTTP/1.1 request: its line, the headers the broker reads,
// and body (a JSON document) when not nil.
func appendRequest(dst []byte, method, target, host, auth string, body []byte) []byte {
	dst = append(dst, method...)
	dst = append(dst, ' ')
	dst = append(dst, target...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, host...)
	if auth != "" {
		dst = append(dst, "\r\nAuthorization: "...)
		dst = append(dst, auth...)
	}
	if body != nil {
		dst = append(dst, "\r\nContent-Type: application/json\r\nContent-Length: "...)
		dst = strconv.AppendInt(dst, int64(len(body)), 10)
	} else if method == http.MethodPost || method == http.MethodPut {
		dst = append(dst, "\r\nContent-Length: 0"...)
	}
	dst = append(dst, "\r\n\r\n"...)
	return append(dst, body...)
}
