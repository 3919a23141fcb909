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

// AdminToken is the admin token of every proxy Start or Exec runs.
const AdminToken = "test-admin-token-0123456789abcdefghij"

// SessionKey is the session key of the proxies Start or Exec runs with Login.
const SessionKey = "test-session-key-0123456789abcdefghij"

// PasswordCost is the bcrypt cost of the passwords a proxy run by Start stores:
// bcrypt's minimum, as the proxy's 12 takes seconds per hash under the race detector.
// A proxy run by Exec hashes at the proxy's own cost, which no setting lowers.
const PasswordCost = 4

// startTimeout bounds how long a proxy may take to serve, its schema applied to a
// fresh database under -race included; stopTimeout bounds its stop.
const (
	startTimeout = 60 * time.Second
	stopTimeout  = 30 * time.Second
)

// Options say how Start or Exec runs a proxy.
type Options struct {
	// Backends are the broker URLs (QUEEN_PROXY_UPSTREAMS).
	Backends []string
	// Env holds NAME=value variables ahead of what Start and Exec add, so they
	// override it (but for the listen addresses Exec sets).
	Env []string
	// DBURL is the proxy database; "" is a fresh one.
	DBURL string
	// Logs captures the output; nil sends it to t.Log.
	Logs *testlog.Buffer
	// Now is the proxy's clock; nil is time.Now. Exec refuses one: a child process
	// has its own.
	Now func() time.Time
	// Login turns login on, with SessionKey.
	Login bool
}

// Proxy is one queen-proxy: run by daemon.Run in the test process (Start) or as a
// child process of the queen-proxy binary (Exec).
type Proxy struct {
	// URL and AdminURL are the public and admin listeners' base URLs.
	URL, AdminURL string
	// DBURL is the proxy's database.
	DBURL string

	// stop ends the run and returns its result: what Stop returns the first time.
	stop func() error
	once sync.Once
	err  error
}

// Start runs a proxy, waits until it serves and registers a cleanup that stops it.
func Start(t testing.TB, o Options) *Proxy {
	t.Helper()
	p := &Proxy{DBURL: o.DBURL}
	if p.DBURL == "" {
		p.DBURL = pgtest.NewDBURL(t)
	}
	cfg, err := config.Load(proxyEnv(t, o, p.DBURL))
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
	ready, done := make(chan struct{}), make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = daemon.Run(ctx, cfg, daemon.Options{Stdout: out, Listener: ln, AdminListener: adm,
			ReadyFunc: func() { close(ready) }, Now: o.Now, PasswordCost: PasswordCost})
	}()
	p.stop = func() error {
		cancel()
		select {
		case <-done:
			return runErr
		case <-time.After(stopTimeout):
			return fmt.Errorf("daemon.Run did not return within %s of the stop", stopTimeout)
		}
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("proxytest: stop: %v", err)
		}
	})
	select {
	case <-ready:
	case <-done:
		t.Fatalf("proxytest: daemon.Run returned before serving: %v", runErr)
	case <-time.After(startTimeout):
		t.Fatalf("proxytest: the proxy is not serving within %s", startTimeout)
	}
	return p
}

// proxyEnv is the environment of a proxy on the database dbURL as o says: o.Env first,
// so that it overrides the rest, as config.Load keeps the first of duplicates.
func proxyEnv(t testing.TB, o Options, dbURL string) []string {
	t.Helper()
	env := append(append([]string{}, o.Env...), daemontest.PGEnv(t, dbURL)...)
	if o.Login {
		env = append(env, "QUEEN_PROXY_LOGIN=true", "QUEEN_PROXY_SESSION_KEY="+SessionKey)
	}
	return append(env, "QUEEN_PROXY_UPSTREAMS="+strings.Join(o.Backends, ","), "QUEEN_PROXY_ADMIN_TOKEN="+AdminToken,
		"QUEEN_PROXY_LOGIN=false", "LOG_LEVEL=warn", "DB_POOL_SIZE=6", "QUEEN_PROXY_UPSTREAM_CHECK_INTERVAL=200ms",
		"QUEEN_PROXY_SHUTDOWN_TIMEOUT=5s", "QUEEN_PROXY_LOG_FORMAT=text")
}

// Stop stops the proxy and returns the result of its run: daemon.Run's error under
// Start; under Exec, an error unless the process exits 0 after SIGTERM. Only the
// first call stops; later ones return its result.
func (p *Proxy) Stop() error {
	p.once.Do(func() { p.err = p.stop() })
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

// WaitBackends waits until every backend is in state want ("up", "misconfigured",
// "down").
func (p *Proxy) WaitBackends(t testing.TB, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var got struct {
			Backends []struct{ URL, State string } `json:"upstreams"`
		}
		p.Admin(t, http.MethodGet, "/admin/v1/upstreams", nil, &got)
		all := len(got.Backends) > 0
		for _, u := range got.Backends {
			all = all && u.State == want
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("proxytest: backends not all %s within %s: %+v", want, within, got.Backends)
		}
		wait(50 * time.Millisecond)
	}
}

// wait blocks for d: the pause between two polls of a condition.
func wait(d time.Duration) {
	<-time.After(d)
}
