package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
	"github.com/queenmq/queen/internal/daemontest"
)

// Bounds of the waits that tests make themselves (daemontest bounds its own).
const (
	// startTimeout bounds how long a broker may take to become ready (schema apply on
	// a fresh database included).
	startTimeout = 30 * time.Second
	// stopTimeout bounds how long a broker may take to stop: well under the default
	// 20 s grace period, since tests leave nothing in flight.
	stopTimeout = 15 * time.Second
)

// testBundle is one broker served in process by daemontest on 127.0.0.1:0, against a
// fresh database of its own.
type testBundle struct {
	// addr is the served host:port and baseURL "http://" + addr.
	addr, baseURL string
	// dbURL is the broker's database, for the few checks the API cannot make.
	dbURL string
	// client speaks the wire like the upstream clients; http is for raw requests.
	client *client.Client
	http   *http.Client
	// cancel starts the stop and returns at once; stop waits for it.
	cancel func()
	srv    *daemontest.Server
}

// startBroker starts a daemon with extraEnv (NAME=value, ahead of daemontest's
// defaults so it can override them), waits until it is ready, and stops it when the
// test ends, requiring daemon.Run to return nil.
func startBroker(t *testing.T, extraEnv ...string) *testBundle {
	t.Helper()
	return serve(t, daemontest.Options{Env: extraEnv})
}

// serve starts a daemon as o says and wraps it in a testBundle.
func serve(t *testing.T, o daemontest.Options) *testBundle {
	t.Helper()
	srv := daemontest.Start(t, o)
	tb := &testBundle{addr: srv.Addr, baseURL: srv.URL, dbURL: srv.DBURL, http: srv.Client(), cancel: srv.Cancel, srv: srv}
	tb.client = client.New(tb.baseURL, client.WithHTTPClient(tb.http))
	return tb
}

// stop stops the daemon and requires daemon.Run to return nil in time. It is
// idempotent: the second call returns the first one's result.
func (tb *testBundle) stop(t *testing.T) error {
	t.Helper()
	err := tb.srv.Stop()
	require.NoError(t, err, "daemon.Run after cancel")
	return err
}

// raw sends one request with net/http and returns the status and the whole body, for
// checks on the bytes on the wire; hdr adds header name, value pairs.
func (tb *testBundle) raw(t *testing.T, method, path, body string, hdr ...string) (int, []byte) {
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
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
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
