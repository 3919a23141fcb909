package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
)

const (
	// DefaultBackoff is the first retry delay; it doubles per attempt, as upstream's.
	DefaultBackoff = time.Second
	// maxBackoff caps the doubling.
	maxBackoff = 30 * time.Second
	// maxResponseBytes bounds how much of a response body is read.
	maxResponseBytes = 64 << 20
)

// Client talks to one Queen broker. It is safe for concurrent use.
type Client struct {
	baseURL string
	hc      *http.Client
	token   string
	headers http.Header
	retries int
	backoff time.Duration
}

// Option configures a [Client].
type Option func(*Client)

// WithToken sends Authorization: Bearer token on every request.
func WithToken(token string) Option {
	return func(c *Client) { c.token = token }
}

// WithHTTPClient replaces the HTTP client. Do not give it a Timeout: long polls need
// more than any sensible global timeout, and the client sets per-request deadlines
// itself.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.hc = hc }
}

// WithHeader adds a header to every request, replacing an earlier value of the same key
// (including the default Content-Type and Accept). Authorization from [WithToken] wins.
func WithHeader(key, value string) Option {
	return func(c *Client) { c.headers.Set(key, value) }
}

// WithRetries retries transport errors and 5xx answers up to n times, with exponential
// backoff from [WithBackoff] (default [DefaultBackoff]), as the upstream clients do with
// n=3; 4xx answers are never retried. The default is 0 because tests want the broker's
// raw answer, and because a retried request may apply twice: with n > 0, [Client.Push]
// fills in missing transaction ids so that a retried push deduplicates.
func WithRetries(n int) Option {
	return func(c *Client) { c.retries = max(n, 0) }
}

// WithBackoff sets the first retry delay; each further retry doubles it, up to 30 s.
func WithBackoff(base time.Duration) Option {
	return func(c *Client) { c.backoff = base }
}

// New returns a client for the broker at baseURL (e.g. "http://localhost:6632"; a path
// prefix is kept, a trailing slash dropped). Unless [WithHTTPClient] replaces it, the
// client has a connection pool of its own with http.DefaultTransport's settings: a
// pool shared with the rest of the process would have its connections closed under
// it by whoever calls CloseIdleConnections on the default transport (every
// httptest.Server does when it closes), failing a request that had just picked one.
func New(baseURL string, opts ...Option) *Client {
	c := &Client{
		baseURL: strings.TrimRight(baseURL, "/"),
		hc:      &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		headers: http.Header{},
		backoff: DefaultBackoff,
	}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// Do sends an arbitrary request, for routes without a typed method. path is relative to
// the base URL and may carry a query string. body is sent as-is when it is []byte or
// json.RawMessage, JSON-encoded otherwise, and omitted when nil (it must be nil for GET
// and HEAD). When out is non-nil a non-empty 2xx body is decoded into it; a *[]byte
// receives the raw body. A status >= 400 returns an [*Error] along with the status.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) (int, error) {
	var raw []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		raw = b
	case json.RawMessage:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return 0, fmt.Errorf("encode %s %s body: %w", method, path, err)
		}
	}
	if raw != nil && (method == http.MethodGet || method == http.MethodHead) {
		return 0, fmt.Errorf("%s %s: a %s request must not have a body", method, path, method)
	}
	resp, err := c.send(ctx, request{method: method, path: path, body: raw})
	if err != nil {
		return statusOf(resp), err
	}
	if p, ok := out.(*[]byte); ok {
		*p = resp.body
		return resp.status, nil
	}
	return resp.status, resp.decode(out)
}

// request is one logical call; send may make several attempts of it.
type request struct {
	method string
	path   string // with the query string, if any
	body   []byte // nil: no body
	// timeout bounds each attempt (0: none beyond ctx).
	timeout time.Duration
}

// response is a fully read HTTP answer.
type response struct {
	method string
	path   string
	status int
	body   []byte
}

// send performs req with retries. It returns the response together with an [*Error]
// when the final status is >= 400, and a nil response on transport errors.
func (c *Client) send(ctx context.Context, req request) (*response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := c.attempt(ctx, req)
		retryable := err != nil || resp.status >= 500
		if !retryable || attempt >= c.retries || ctx.Err() != nil {
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", req.method, req.path, err)
			}
			if resp.status >= 400 {
				return resp, newError(resp)
			}
			return resp, nil
		}
		t := time.NewTimer(backoffDelay(c.backoff, attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%s %s: %w", req.method, req.path, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// attempt makes one HTTP exchange and reads the whole body.
func (c *Client) attempt(ctx context.Context, req request) (*response, error) {
	if req.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.timeout)
		defer cancel()
	}
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	path := req.path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, c.baseURL+path, body)
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	for k, vs := range c.headers {
		hr.Header[k] = slices.Clone(vs)
	}
	if c.token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.token)
	}
	hres, err := c.hc.Do(hr)
	if err != nil {
		return nil, err
	}
	defer hres.Body.Close()
	data, err := io.ReadAll(io.LimitReader(hres.Body, maxResponseBytes))
	if err != nil {
		return nil, fmt.Errorf("read response (HTTP %d): %w", hres.StatusCode, err)
	}
	return &response{method: req.method, path: req.path, status: hres.StatusCode, body: data}, nil
}

// decode unmarshals a non-empty body into out; an empty body leaves out untouched (the
// zero value).
func (r *response) decode(out any) error {
	if out == nil || len(bytes.TrimSpace(r.body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.body, out); err != nil {
		return fmt.Errorf("%s %s: decode HTTP %d body: %w", r.method, r.path, r.status, err)
	}
	return nil
}

// decodeList decodes a route whose success shape is a top-level array. An empty body or
// a non-error object ({}) yields nil; an object carrying "error" is upstream's 200
// failure shape and becomes an [*Error].
func decodeList[T any](r *response) ([]T, error) {
	trimmed := bytes.TrimSpace(r.body)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return nil, bodyError(r)
	}
	var out []T
	return out, r.decode(&out)
}

// bodyError returns an [*Error] when r's body is a JSON object with a non-empty string
// "error" (upstream's 200-with-error answers), else nil.
func bodyError(r *response) error {
	var probe struct {
		Error any `json:"error"`
	}
	if json.Unmarshal(r.body, &probe) != nil {
		return nil
	}
	if msg, ok := probe.Error.(string); ok && msg != "" {
		return newError(r)
	}
	return nil
}

// backoffDelay is base doubled attempt times, capped at maxBackoff.
func backoffDelay(base time.Duration, attempt int) time.Duration {
	d := min(max(base, 0), maxBackoff)
	for range attempt {
		d = min(2*d, maxBackoff)
	}
	return d
}

func statusOf(r *response) int {
	if r == nil {
		return 0
	}
	return r.status
}
