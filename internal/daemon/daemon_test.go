package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/daemon"
	"github.com/queenmq/queen/internal/pgtest"
)

const (
	// startTimeout bounds how long a daemon may take to become ready (schema apply on a
	// fresh database included).
	startTimeout = 30 * time.Second
	// stopTimeout bounds how long Run may take to return after its context is
	// cancelled: well under the default 20 s grace period, since tests leave nothing
	// in flight.
	stopTimeout = 15 * time.Second
)

// testBundle is one broker served in process by daemon.Run on 127.0.0.1:0, against a
// fresh database of its own.
type testBundle struct {
	// addr is the served host:port and baseURL "http://" + addr.
	addr, baseURL string
	// dbURL is the broker's database, for the few checks the API cannot make.
	dbURL string
	// client speaks the wire like the upstream clients; http is for raw requests.
	client *client.Client
	http   *http.Client

	cancel   context.CancelFunc
	done     chan error // receives Run's result once
	stopOnce sync.Once
	runErr   error
}

// startBroker starts a daemon with the test database's PG_* variables, quiet logs and
// a small pool, plus extraEnv (NAME=value, applied last so it can override), waits
// until it is ready, and stops it when the test ends, requiring Run to return nil
// within stopTimeout.
func startBroker(t *testing.T, extraEnv ...string) *testBundle {
	t.Helper()

	dbURL := pgtest.NewDBURL(t)
	env := append(pgEnv(t, dbURL),
		"HOST=127.0.0.1",
		"LOG_LEVEL=warn",
		"DB_POOL_SIZE=8",
	)
	cfg, err := config.Load(append(env, extraEnv...))
	require.NoError(t, err)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	logs := &testLogWriter{t: t}
	ready := make(chan string, 1)
	tb := &testBundle{dbURL: dbURL, cancel: cancel, done: make(chan error, 1), http: &http.Client{}}
	go func() {
		tb.done <- daemon.Run(ctx, cfg, daemon.Options{
			Stdout:    logs,
			Listener:  ln,
			ReadyFunc: func(addr string) { ready <- addr },
		})
	}()
	t.Cleanup(func() {
		tb.stop(t)
		logs.close()
		tb.http.CloseIdleConnections()
	})

	select {
	case tb.addr = <-ready:
	case err := <-tb.done:
		tb.done <- err // for stop
		require.FailNow(t, "daemon.Run returned before the broker was ready", "err: %v", err)
	case <-time.After(startTimeout):
		require.FailNow(t, "broker not ready", "no ReadyFunc call within %s", startTimeout)
	}
	tb.baseURL = "http://" + tb.addr
	tb.client = client.New(tb.baseURL, client.WithHTTPClient(tb.http))

	// ReadyFunc and /health/ready must agree.
	status, _ := tb.raw(t, http.MethodGet, "/health/ready", "")
	require.Equal(t, http.StatusOK, status, "/health/ready after ReadyFunc")
	return tb
}

// stop cancels the daemon's context and requires Run to return nil within
// stopTimeout. It is idempotent: the second call returns the first one's result.
func (tb *testBundle) stop(t *testing.T) error {
	t.Helper()
	tb.stopOnce.Do(func() {
		tb.cancel()
		select {
		case tb.runErr = <-tb.done:
			require.NoError(t, tb.runErr, "daemon.Run after cancel")
		case <-time.After(stopTimeout):
			tb.runErr = context.DeadlineExceeded
			t.Errorf("daemon.Run did not return within %s of cancel", stopTimeout)
		}
	})
	return tb.runErr
}

// raw sends one request with net/http and returns the status and the whole body, for
// checks on the bytes on the wire.
func (tb *testBundle) raw(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, tb.baseURL+path, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := tb.http.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, data
}

// errorBody decodes a JSON error answer.
func errorBody(t *testing.T, body []byte) api.ErrorBody {
	t.Helper()
	var eb api.ErrorBody
	require.NoError(t, json.Unmarshal(body, &eb), "error body is JSON: %s", body)
	require.NotEmpty(t, eb.Error, "error body names the problem: %s", body)
	return eb
}

// pgEnv turns a postgres:// URL into the daemon's PG_* variables.
func pgEnv(t *testing.T, dbURL string) []string {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	env := []string{
		"PG_HOST=" + u.Hostname(),
		"PG_PORT=" + u.Port(),
		"PG_DB=" + strings.TrimPrefix(u.Path, "/"),
		"FILE_BUFFER_DIR=" + t.TempDir(), // one spool per broker: the default is shared and locked
	}
	if u.Port() == "" {
		env[1] = "PG_PORT=5432"
	}
	if u.User != nil {
		env = append(env, "PG_USER="+u.User.Username())
		if pw, ok := u.User.Password(); ok {
			env = append(env, "PG_PASSWORD="+pw)
		}
	}
	if u.Query().Get("sslmode") == "require" {
		env = append(env, "PG_USE_SSL=true")
	}
	return env
}

// ctxT returns a context for one test step.
func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// push pushes one payload per item to queue/partition and requires every item queued.
func push(t *testing.T, tb *testBundle, queueName, partition string, payloads ...string) []api.PushResult {
	t.Helper()
	items := make([]api.PushItem, len(payloads))
	for i, p := range payloads {
		items[i] = api.PushItem{Queue: queueName, Partition: partition, Payload: json.RawMessage(p)}
	}
	res, err := tb.client.Push(ctxT(t), items...)
	require.NoError(t, err)
	require.Len(t, res, len(payloads))
	for i, r := range res {
		require.Equal(t, api.PushStatusQueued, r.Status, "item %d: %+v", i, r)
		require.NotEmpty(t, r.MessageID, "item %d", i)
	}
	return res
}

// queueTotals returns a queue's counters; an unknown queue has none.
func queueTotals(t *testing.T, tb *testBundle, name string) api.Counters {
	t.Helper()
	d, err := tb.client.GetQueue(ctxT(t), name)
	if client.IsNotFound(err) {
		return api.Counters{}
	}
	require.NoError(t, err)
	return d.Totals
}

// payloads returns the data of msgs in canonical JSON (object keys sorted, no
// spaces), for order and content checks: PostgreSQL's jsonb does not keep key order.
func payloads(t *testing.T, msgs []api.Message) []string {
	t.Helper()
	out := make([]string, len(msgs))
	for i, m := range msgs {
		var v any
		require.NoError(t, json.Unmarshal(m.Data, &v), "message %d data: %s", i, m.Data)
		b, err := json.Marshal(v)
		require.NoError(t, err)
		out[i] = string(b)
	}
	return out
}

// testLogWriter sends the daemon's log lines to t.Log until the test ends.
type testLogWriter struct {
	t *testing.T

	mu     sync.Mutex
	closed bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testLogWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}

// popEventually pops with o until a pop returns messages, within waitFor, and returns
// that answer. A failed pop ends the polling and fails the test.
func popEventually(t *testing.T, tb *testBundle, o client.PopOptions, waitFor time.Duration, msg string) *api.PopResponse {
	t.Helper()
	ctx := ctxT(t)
	var (
		got *api.PopResponse
		err error
	)
	require.Eventually(t, func() bool {
		got, err = tb.client.Pop(ctx, o)
		return err != nil || len(got.Messages) > 0
	}, waitFor, 100*time.Millisecond, msg)
	require.NoError(t, err, msg)
	return got
}

// answer is the outcome of a request sent in the background.
type answer struct {
	status int
	body   []byte
	err    error
}

// rawAsync sends a bodiless request in the background and delivers its outcome on
// the returned channel.
func (tb *testBundle) rawAsync(ctx context.Context, method, path string) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		var a answer
		defer func() { ch <- a }()
		req, err := http.NewRequestWithContext(ctx, method, tb.baseURL+path, nil)
		if err != nil {
			a.err = err
			return
		}
		resp, err := tb.http.Do(req)
		if err != nil {
			a.err = err
			return
		}
		defer resp.Body.Close()
		a.status = resp.StatusCode
		a.body, a.err = io.ReadAll(resp.Body)
	}()
	return ch
}

func TestDaemonServesAndStops(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)

	h, err := tb.client.Health(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, api.HealthStatusHealthy, h.Status)
	require.Equal(t, api.DatabaseConnected, h.Database)

	require.NoError(t, tb.stop(t))
	_, err = net.DialTimeout("tcp", tb.addr, time.Second)
	require.Error(t, err, "the listener is closed once Run has returned")
}
