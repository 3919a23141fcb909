package cli_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/cli"
)

// runMain runs cli.Main in process against server and returns the exit status,
// stdout and stderr.
func runMain(t *testing.T, server string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := []string{"QUEEN_SERVER=" + server, "HOME=" + t.TempDir()}
	code := cli.Main(context.Background(), args, env, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// stub answers every request with status and body.
func stub(t *testing.T, status int, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestExitCodes maps broker answers to exit statuses and error lines, for the
// statuses a real broker cannot easily be made to send (401/403 until JWT lands,
// 409, 500, upstream's 200-with-error).
func TestExitCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		body   string
		args   []string
		code   int
		stderr string
	}{
		{name: "Unauthenticated", status: 401, body: `{"error":"Missing authorization header","code":"unauthenticated"}`,
			args: []string{"queue", "list"}, code: cli.ExitAuth,
			stderr: "queenctl queue list: list queues: Missing authorization header (HTTP 401 from GET /api/v1/resources/queues); " +
				"the broker requires a token: give one with --token, QUEEN_TOKEN or a context\n"},
		{name: "TokenRefused", status: 401, body: `{"error":"Invalid token signature"}`,
			args: []string{"queue", "list", "--token", "x"}, code: cli.ExitAuth,
			stderr: "queenctl queue list: list queues: Invalid token signature (HTTP 401 from GET /api/v1/resources/queues); the token from --token was refused\n"},
		{name: "Forbidden", status: 403, body: `{"error":"Insufficient permissions"}`,
			args: []string{"queue", "delete", "q", "--yes"}, code: cli.ExitAuth,
			stderr: `queenctl queue delete: delete queue "q": Insufficient permissions (HTTP 403 from DELETE /api/v1/resources/queues/q); the token's role does not allow this` + "\n"},
		{name: "NotFound", status: 404, body: `{"error":"Queue not found","code":"not_found"}`,
			args: []string{"queue", "get", "q"}, code: cli.ExitNotFound,
			stderr: `queenctl queue get: queue "q": Queue not found (HTTP 404 from GET /api/v1/resources/queues/q)` + "\n"},
		{name: "UpstreamNotFoundOn200", status: 200, body: `{"error":"Queue not found"}`,
			args: []string{"queue", "get", "q"}, code: cli.ExitNotFound,
			stderr: `queenctl queue get: queue "q": Queue not found (HTTP 200 from GET /api/v1/resources/queues/q)` + "\n"},
		{name: "UpstreamDBErrorOn200", status: 200, body: `{"success":false,"error":"connection reset"}`,
			args: []string{"cg", "list"}, code: cli.ExitFailure,
			stderr: "queenctl cg list: list consumer groups: connection reset (HTTP 200 from GET /api/v1/consumer-groups)\n"},
		{name: "Conflict", status: 409, body: `{"error":"already there","code":"conflict"}`,
			args: []string{"queue", "configure", "q"}, code: cli.ExitFailure,
			stderr: `queenctl queue configure: configure queue "q": already there (HTTP 409 from POST /api/v1/configure)` + "\n"},
		{name: "Internal", status: 500, body: `{"error":"internal error","request_id":"r1"}`,
			args: []string{"status"}, code: cli.ExitFailure,
			stderr: "queenctl status: status: internal error (HTTP 500 from GET /api/v1/status)\n"},
		{name: "Unhealthy", status: 503, body: `{"status":"unhealthy","database":"disconnected","version":"1"}`,
			args: []string{"ping"}, code: cli.ExitUnavailable,
			stderr: "queenctl ping: health check: the broker is unhealthy, database disconnected (HTTP 503 from GET /health)\n"},
		{name: "PushRefused", status: 503, body: `{"error":"push maintenance mode is on","code":"unavailable"}`,
			args: []string{"push", "q", "1"}, code: cli.ExitUnavailable,
			stderr: "queenctl push: push to q: push maintenance mode is on (HTTP 503 from POST /api/v1/push)\n"},
		{name: "NotJSON", status: 200, body: `<html>`,
			args: []string{"queue", "list"}, code: cli.ExitFailure,
			stderr: "queenctl queue list: list queues: GET /api/v1/resources/queues: decode the answer: invalid character '<' looking for beginning of value\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := stub(t, tc.status, tc.body)
			code, _, stderr := runMain(t, srv.URL, tc.args...)
			require.Equal(t, tc.code, code, stderr)
			require.Equal(t, tc.stderr, stderr)
		})
	}
}

func TestUnhealthyPingShowsTheBody(t *testing.T) {
	t.Parallel()
	srv := stub(t, 503, `{"status":"unhealthy","database":"disconnected","version":"1.2.3"}`)
	code, stdout, _ := runMain(t, srv.URL, "ping")
	require.Equal(t, cli.ExitUnavailable, code)
	require.Regexp(t, `^`+srv.URL+` is unhealthy: database disconnected, version 1.2.3, \S+\n$`, stdout)
}

func TestInterruptedIs130(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	done := make(chan int)
	go func() {
		done <- cli.Main(ctx, []string{"queue", "list"}, []string{"QUEEN_SERVER=" + srv.URL}, strings.NewReader(""), &stdout, &stderr)
	}()
	cancel()
	require.Equal(t, cli.ExitInterrupted, <-done)
	require.Equal(t, "queenctl queue list: interrupted\n", stderr.String())
}

func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(srv.Close)
	code, _, stderr := runMain(t, srv.URL, "queue", "list", "--timeout", "50ms")
	require.Equal(t, cli.ExitUnavailable, code, stderr)
	require.Contains(t, stderr, "cannot reach the broker at "+srv.URL+" (QUEEN_SERVER): context deadline exceeded")
}

func TestRequestsCarryTokenAndUserAgent(t *testing.T) {
	t.Parallel()
	got := make(chan *http.Request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r
		_, _ = w.Write([]byte(`{"queues":[]}`))
	}))
	t.Cleanup(srv.Close)
	var stdout, stderr bytes.Buffer
	env := []string{"QUEEN_SERVER=" + srv.URL + "/", "QUEEN_TOKEN=tok-1", "HOME=" + t.TempDir()}
	code := cli.Main(context.Background(), []string{"queue", "list", "--namespace", "billing"}, env, strings.NewReader(""), &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	r := <-got
	require.Equal(t, "Bearer tok-1", r.Header.Get("Authorization"))
	require.True(t, strings.HasPrefix(r.Header.Get("User-Agent"), "queenctl/"), r.Header.Get("User-Agent"))
	require.Equal(t, "/api/v1/resources/queues?namespace=billing", r.URL.RequestURI())
	require.Equal(t, "No queues.\n", stdout.String())
}
