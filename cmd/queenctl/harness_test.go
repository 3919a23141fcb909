package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
	"github.com/queenmq/queen/internal/daemontest"
)

// testVersion is stamped into the queenctl binary the tests run.
const testVersion = "9.9.9-test"

// queenctlBin is the binary built once by TestMain; every test runs it.
var queenctlBin string

// TestMain builds queenctl once, as `make build` does, so that the tests exercise the
// real binary: flag parsing, exit statuses and stream handling included.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "queenctl-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	queenctlBin = filepath.Join(dir, "queenctl")
	build := exec.Command("go", "build", "-trimpath", "-o", queenctlBin,
		"-ldflags", "-X github.com/queenmq/queen/internal/buildinfo.Version="+testVersion, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build queenctl: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runTimeout bounds one queenctl run, and one step of a test.
const runTimeout = 30 * time.Second

// testBroker is a queen daemon served in process by daemontest on 127.0.0.1:0 against
// a fresh database.
type testBroker struct {
	url    string
	client *client.Client
	// dbURL is the broker's database, for facts a test arranges in SQL.
	dbURL string
}

// startBroker starts a broker with extraEnv (NAME=value) and stops it when the test
// ends, requiring daemon.Run to return nil.
func startBroker(t *testing.T, extraEnv ...string) *testBroker {
	t.Helper()
	srv := daemontest.Start(t, daemontest.Options{Env: extraEnv})
	return &testBroker{url: srv.URL, client: client.New(srv.URL), dbURL: srv.DBURL}
}

// result is one finished queenctl run.
type result struct {
	code           int
	stdout, stderr string
}

// String shows the run for failure messages.
func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run runs queenctl against the broker with args. HOME is a fresh directory, so no
// config file applies unless the test writes one.
func (b *testBroker) run(t *testing.T, args ...string) result {
	t.Helper()
	return runQueenctl(t, []string{"QUEEN_SERVER=" + b.url}, "", args...)
}

// runIn is run with standard input.
func (b *testBroker) runIn(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return runQueenctl(t, []string{"QUEEN_SERVER=" + b.url}, stdin, args...)
}

// runQueenctl runs the binary with a minimal environment plus env, and stdin.
func runQueenctl(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, queenctlBin, args...)
	cmd.Env = append([]string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		require.NoError(t, err, "run queenctl %q", args)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// ok requires exit 0 and an empty stderr, and returns stdout.
func ok(t *testing.T, r result) string {
	t.Helper()
	require.Equal(t, 0, r.code, "%s", r)
	require.Empty(t, r.stderr, "%s", r)
	return r.stdout
}

// fails requires the exit status and a stderr line containing every want.
func fails(t *testing.T, r result, code int, want ...string) {
	t.Helper()
	require.Equal(t, code, r.code, "%s", r)
	require.True(t, strings.HasPrefix(r.stderr, "queenctl"), "errors start with the program name: %s", r)
	for _, w := range want {
		require.Contains(t, r.stderr, w, "%s", r)
	}
}

// decode parses JSON output into v.
func decode(t *testing.T, out string, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal([]byte(out), v), "JSON output:\n%s", out)
}

// lines splits output into lines without the trailing empty one.
func lines(out string) []string { return strings.Split(strings.TrimRight(out, "\n"), "\n") }

// fields splits each non-blank line into its whitespace-separated cells.
func fields(out string) [][]string {
	var rows [][]string
	for _, l := range lines(out) {
		if f := strings.Fields(l); len(f) > 0 {
			rows = append(rows, f)
		}
	}
	return rows
}

// ctxT is a context for one test step.
func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	t.Cleanup(cancel)
	return ctx
}

// push stores payloads in queue (partition "" is Default) through the client.
func (b *testBroker) push(t *testing.T, queue, partition string, payloads ...string) []api.PushResult {
	t.Helper()
	items := make([]api.PushItem, len(payloads))
	for i, p := range payloads {
		items[i] = api.PushItem{Queue: queue, Partition: partition, Payload: json.RawMessage(p)}
	}
	res, err := b.client.Push(ctxT(t), items...)
	require.NoError(t, err)
	for _, r := range res {
		require.Equal(t, api.PushStatusQueued, r.Status)
	}
	return res
}

// deadLetter pushes payloads to queue and moves each to the DLQ with error msg.
func (b *testBroker) deadLetter(t *testing.T, queue, msg string, payloads ...string) {
	t.Helper()
	b.push(t, queue, "", payloads...)
	for range payloads {
		r, err := b.client.Pop(ctxT(t), client.PopOptions{Queue: queue})
		require.NoError(t, err)
		require.Len(t, r.Messages, 1)
		m := r.Messages[0]
		res, err := b.client.Ack(ctxT(t), api.AckRequest{TransactionID: m.TransactionID, PartitionID: m.PartitionID,
			LeaseID: m.LeaseID, Status: api.AckStatusDLQ, Error: msg})
		require.NoError(t, err)
		require.True(t, res.Success, "%+v", res)
	}
}

// closedServer returns the URL of a port nothing listens on.
func closedServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return "http://" + addr
}

// popOpts pops up to 1000 messages of queue in queue mode, auto-acked.
func popOpts(queue string) client.PopOptions {
	return client.PopOptions{Queue: queue, Batch: 1000, Partitions: 100}
}

// popAll pops (auto-ack) whatever is poppable in queue.
func popAll(t *testing.T, b *testBroker, queue string) *api.PopResponse {
	t.Helper()
	o := popOpts(queue)
	o.AutoAck = true
	r, err := b.client.Pop(ctxT(t), o)
	require.NoError(t, err)
	return r
}

// payloads returns the messages' data in canonical JSON (jsonb does not keep key
// order or spacing).
func payloads(r *api.PopResponse) []string {
	out := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		var v any
		if json.Unmarshal(m.Data, &v) != nil {
			out[i] = string(m.Data)
			continue
		}
		b, _ := json.Marshal(v)
		out[i] = string(b)
	}
	return out
}
