package proxytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/proxy/config"
	"github.com/queenmq/queen/internal/proxy/daemon"
	"github.com/queenmq/queen/internal/testlog"
)

// AdminToken is the admin token of every proxy Start runs.
const AdminToken = "test-admin-token-0123456789abcdefghij"

// SessionKey is the session key of the proxies Start runs with Login.
const SessionKey = "test-session-key-0123456789abcdefghij"

// PasswordCost is the bcrypt cost of the passwords a test proxy stores: bcrypt's
// minimum, as the proxy's 12 takes seconds per hash under the race detector.
const PasswordCost = 4

// Options say how Start runs a proxy.
type Options struct {
	// Upstreams are the broker URLs (QUEEN_PROXY_UPSTREAMS).
	Upstreams []string
	// Env holds NAME=value variables ahead of what Start adds, so they override it.
	Env []string
	// DBURL is the proxy database; "" is a fresh one.
	DBURL string
	// Logs captures the output; nil sends it to t.Log.
	Logs *testlog.Buffer
	// Now is the proxy's clock; nil is time.Now.
	Now func() time.Time
	// Login turns login on, with SessionKey.
	Login bool
}

// Proxy is one queen-proxy run by daemon.Run in the test process.
type Proxy struct {
	// URL and AdminURL are the public and admin listeners' base URLs.
	URL, AdminURL string
	// DBURL is the proxy's database.
	DBURL string

	t      testing.TB
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	once   sync.Once
}

// Start runs a proxy, waits until it serves and registers a cleanup that stops it.
func Start(t testing.TB, o Options) *Proxy {
	t.Helper()
	p := &Proxy{t: t, DBURL: o.DBURL, done: make(chan struct{})}
	if p.DBURL == "" {
		p.DBURL = pgtest.NewDBURL(t)
	}
	env := append(append([]string{}, o.Env...), daemontest.PGEnv(t, p.DBURL)...)
	if o.Login {
		env = append(env, "QUEEN_PROXY_LOGIN=true", "QUEEN_PROXY_SESSION_KEY="+SessionKey)
	}
	env = append(env, "QUEEN_PROXY_UPSTREAMS="+strings.Join(o.Upstreams, ","), "QUEEN_PROXY_ADMIN_TOKEN="+AdminToken,
		"QUEEN_PROXY_LOGIN=false", "LOG_LEVEL=warn", "DB_POOL_SIZE=6", "QUEEN_PROXY_UPSTREAM_CHECK_INTERVAL=200ms",
		"QUEEN_PROXY_SHUTDOWN_TIMEOUT=5s", "QUEEN_PROXY_LOG_FORMAT=text")
	cfg, err := config.Load(env)
	if err != nil {
		t.Fatalf("proxytest: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	adm, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.URL, p.AdminURL = "http://"+ln.Addr().String(), "http://"+adm.Addr().String()
	var out io.Writer = o.Logs
	if o.Logs == nil {
		out = testlog.Writer(t)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	ready := make(chan struct{})
	go func() {
		defer close(p.done)
		p.err = daemon.Run(ctx, cfg, daemon.Options{Stdout: out, Listener: ln, AdminListener: adm,
			ReadyFunc: func() { close(ready) }, Now: o.Now, PasswordCost: PasswordCost})
	}()
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("proxytest: stop: %v", err)
		}
	})
	select {
	case <-ready:
	case <-p.done:
		t.Fatalf("proxytest: daemon.Run returned before serving: %v", p.err)
	case <-time.After(60 * time.Second):
		t.Fatal("proxytest: the proxy is not serving within 60s")
	}
	return p
}

// Stop cancels the run and waits for daemon.Run to return, returning its result.
func (p *Proxy) Stop() error {
	p.once.Do(func() {
		p.cancel()
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			p.err = fmt.Errorf("daemon.Run did not return within 30s of the stop")
		}
	})
	return p.err
}

// Admin calls the admin API with the admin token and decodes a JSON answer into out
// (when not nil); it returns the status.
func (p *Proxy) Admin(t testing.TB, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, p.AdminURL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("proxytest: %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if out != nil {
		raw, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("proxytest: %s %s answered %d %q: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode
}

// WaitUpstreams waits until every upstream is in state want ("up", "misconfigured",
// "down").
func (p *Proxy) WaitUpstreams(t testing.TB, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var got struct {
			Upstreams []struct{ URL, State string } `json:"upstreams"`
		}
		p.Admin(t, http.MethodGet, "/admin/v1/upstreams", nil, &got)
		all := len(got.Upstreams) > 0
		for _, u := range got.Upstreams {
			all = all && u.State == want
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("proxytest: upstreams not all %s within %s: %+v", want, within, got.Upstreams)
		}
		wait(50 * time.Millisecond)
	}
}

// wait blocks for d: the pause between two polls of a condition.
func wait(d time.Duration) {
	<-time.After(d)
}
