package cli

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/client"
)

// DefaultServer is the broker queenctl talks to when nothing else is set: the local
// one, as installed by the deb and rpm packages.
const DefaultServer = "http://localhost:6632"

// target is the broker a command talks to, and where each setting came from (for
// error messages: "cannot reach the broker at X (from QUEEN_SERVER)").
type target struct {
	server, serverFrom string
	token, tokenFrom   string
	// context is the name of the context in use, "" when none.
	context string
}

// resolveTarget applies the precedence, per setting:
//
//  1. the --server / --token flag;
//  2. the context named by --context or $QUEEN_CONTEXT;
//  3. $QUEEN_SERVER / $QUEEN_TOKEN;
//  4. the config file's current-context;
//  5. DefaultServer (no token).
func resolveTarget(g *globals, env map[string]string, f *ctxFile) (*target, error) {
	t := &target{}
	var named, current *ctxEntry
	name, nameFrom := g.context, "--context"
	if name == "" {
		name, nameFrom = env["QUEEN_CONTEXT"], "QUEEN_CONTEXT"
	}
	if name != "" {
		if named = f.find(name); named == nil {
			return nil, usagef("context %q (from %s) is not in the config file %s", name, nameFrom, displayPath(f.path))
		}
		t.context = name
	} else if f.CurrentContext != "" {
		if current = f.find(f.CurrentContext); current == nil {
			return nil, usagef("current-context %q is not defined in the config file %s", f.CurrentContext, displayPath(f.path))
		}
	}

	pick := func(flagV, flagName string, fromCtx func(*ctxEntry) string, envName string) (string, string) {
		switch {
		case flagV != "":
			return flagV, flagName
		case named != nil && fromCtx(named) != "":
			return fromCtx(named), "context " + named.Name
		case env[envName] != "":
			return env[envName], envName
		case current != nil && fromCtx(current) != "":
			return fromCtx(current), "context " + current.Name
		}
		return "", ""
	}
	t.server, t.serverFrom = pick(g.server, "--server", func(c *ctxEntry) string { return c.Server }, "QUEEN_SERVER")
	t.token, t.tokenFrom = pick(g.token, "--token", func(c *ctxEntry) string { return c.Token }, "QUEEN_TOKEN")
	if t.server == "" {
		t.server, t.serverFrom = DefaultServer, "the default"
	}
	if t.context == "" && current != nil && (strings.HasPrefix(t.serverFrom, "context ") || strings.HasPrefix(t.tokenFrom, "context ")) {
		t.context = current.Name
	}
	t.server = normalizeServer(t.server)
	return t, nil
}

// normalizeServer adds http:// to a bare host:port and drops a trailing slash.
func normalizeServer(s string) string {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	return strings.TrimRight(s, "/")
}

// displayPath is path, or a note that there is none.
func displayPath(path string) string {
	if path == "" {
		return "(none: no HOME)"
	}
	return path
}

// newClient builds the HTTP client of one invocation: connections time out after
// dialTimeout, and every request without its own deadline (long polls have one) gets
// requestTimeout (0: none).
func newClient(t *target, requestTimeout time.Duration) (*client.Client, *http.Client) {
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   dialTimeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	hc := &http.Client{Transport: &timeoutTransport{base: tr, timeout: requestTimeout}}
	opts := []client.Option{client.WithHTTPClient(hc), client.WithHeader("User-Agent", userAgent())}
	if t.token != "" {
		opts = append(opts, client.WithToken(t.token))
	}
	return client.New(t.server, opts...), hc
}

// dialTimeout bounds connecting to the broker.
const dialTimeout = 10 * time.Second

// timeoutTransport gives each request without a deadline of its own a timeout that
// covers reading the body too (it ends when the body is closed).
type timeoutTransport struct {
	base    http.RoundTripper
	timeout time.Duration
}

// RoundTrip implements http.RoundTripper.
func (t *timeoutTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if _, ok := r.Context().Deadline(); ok || t.timeout <= 0 {
		return t.base.RoundTrip(r)
	}
	ctx, cancel := context.WithTimeout(r.Context(), t.timeout)
	resp, err := t.base.RoundTrip(r.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelBody releases a request's timeout when its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

// Close implements io.Closer.
func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
