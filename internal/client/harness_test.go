package client_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/queenmq/queen/internal/client"
)

// recorded is what the fake broker saw of one request.
type recorded struct {
	Method     string
	RequestURI string // escaped path and query, as sent
	Path       string
	Query      url.Values
	Header     http.Header
	Body       string
}

// reply is one canned answer of the fake broker.
type reply struct {
	status int
	body   string
}

// testBundle is a fake broker that records requests and answers from a script.
type testBundle struct {
	srv    *httptest.Server
	client *client.Client

	mu      sync.Mutex
	reqs    []recorded
	replies []reply // consumed in order; the last one repeats
}

// setup starts a fake broker answering with replies and a client pointed at it.
func setup(t *testing.T, replies []reply, opts ...client.Option) *testBundle {
	t.Helper()
	b := &testBundle{replies: replies}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	b.client = client.New(b.srv.URL, opts...)
	return b
}

// answer is shorthand for a bundle with a single repeated reply.
func answer(t *testing.T, status int, body string, opts ...client.Option) *testBundle {
	t.Helper()
	return setup(t, []reply{{status, body}}, opts...)
}

func (b *testBundle) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	b.mu.Lock()
	b.reqs = append(b.reqs, recorded{
		Method: r.Method, RequestURI: r.RequestURI, Path: r.URL.Path, Query: r.URL.Query(),
		Header: r.Header.Clone(), Body: string(body),
	})
	rep := b.replies[min(len(b.reqs), len(b.replies))-1]
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	_, _ = io.WriteString(w, rep.body)
}

// requests returns everything recorded so far.
func (b *testBundle) requests() []recorded {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]recorded(nil), b.reqs...)
}

// only returns the single recorded request, failing if there were more or none.
func (b *testBundle) only(t *testing.T) recorded {
	t.Helper()
	reqs := b.requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1: %+v", len(reqs), reqs)
	}
	return reqs[0]
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
