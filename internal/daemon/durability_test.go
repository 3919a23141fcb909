package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/testlog"
)

// The durability tests: PostgreSQL stopped under load, the broker killed
// with a non-empty spool, a full disk, and a start with PostgreSQL down. They print
// their counts (go test -v, or on failure).

// node is a broker reached over HTTP (in process or a child process).
type node struct {
	base string
	http *http.Client
}

func newNode(base string) *node {
	return &node{base: base, http: &http.Client{Timeout: 60 * time.Second}}
}

// do sends a request and returns the status and body; err is a transport failure.
func (n *node) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, n.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

func (n *node) must(t *testing.T, method, path string, body any, want int, out any) {
	t.Helper()
	code, data, err := n.do(t.Context(), method, path, body)
	require.NoError(t, err)
	require.Equal(t, want, code, "%s %s: %s", method, path, data)
	if out != nil {
		require.NoError(t, json.Unmarshal(data, out), "%s", data)
	}
}

func (n *node) buffers(t *testing.T) api.BufferStatus {
	t.Helper()
	var st api.BufferStatus
	n.must(t, http.MethodGet, "/api/v1/status/buffers", nil, http.StatusOK, &st)
	return st
}

func (n *node) setMaintenance(t *testing.T, on bool) {
	t.Helper()
	n.must(t, http.MethodPost, "/api/v1/system/maintenance", map[string]bool{"enabled": on}, http.StatusOK, nil)
}

func (n *node) waitDrained(t *testing.T, within time.Duration) api.BufferStatus {
	t.Helper()
	var st api.BufferStatus
	require.Eventually(t, func() bool {
		st = n.buffers(t)
		return st.Pending == 0
	}, within, 20*time.Millisecond, "spool not drained")
	return st
}

// consume pops everything of queue q for group (autoAck) and counts deliveries per
// transaction id.
func (n *node) consume(t *testing.T, q, group string) map[string]int {
	t.Helper()
	got, _ := n.consumeInOrder(t, q, group)
	return got
}

// consumeInOrder is consume that also returns the transaction ids of each partition
// in delivery order.
func (n *node) consumeInOrder(t *testing.T, q, group string) (map[string]int, map[string][]string) {
	t.Helper()
	got, order := map[string]int{}, map[string][]string{}
	for i := 0; ; i++ {
		require.Less(t, i, 10000, "consume does not end")
		code, data, err := n.do(t.Context(), http.MethodGet,
			"/api/v1/pop/queue/"+q+"?consumerGroup="+group+"&batch=1000&partitions=100&autoAck=true", nil)
		require.NoError(t, err)
		if code == http.StatusNoContent {
			return got, order
		}
		require.Equal(t, http.StatusOK, code, "%s", data)
		var res api.PopResponse
		require.NoError(t, json.Unmarshal(data, &res))
		require.NotEmpty(t, res.Messages, "%s", data)
		for _, m := range res.Messages {
			got[m.TransactionID]++
			order[m.Partition] = append(order[m.Partition], m.TransactionID)
		}
	}
}

// ledger records how each pushed transaction id was answered.
type ledger struct {
	mu     sync.Mutex
	status map[string]string
	counts map[string]int
}

func newLedger() *ledger { return &ledger{status: map[string]string{}, counts: map[string]int{}} }

func (l *ledger) note(id, status string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.status[id] = status
	l.counts[status]++
}

func (l *ledger) count(status string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[status]
}

// produce pushes batches of 5 (one per partition p0…p4, unique transaction ids) from
// workers goroutines until ctx is done, recording every answer. ctx stops the workers
// between requests, never during one: the broker would go on with a push its client
// gave up on, and a consumer started after wait would race with that push's commit
// (and, as the first pop of its group, could answer 204 before it).
func produce(ctx context.Context, n *node, q string, workers int, l *ledger) (wait func()) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for seq := 0; ctx.Err() == nil; seq++ {
				items := make([]api.PushItem, 5)
				for k := range items {
					items[k] = api.PushItem{Queue: q, Partition: fmt.Sprintf("p%d", k),
						TransactionID: fmt.Sprintf("w%d-%06d-%d", w, seq, k), Payload: json.RawMessage(`{"n":1}`)}
				}
				reqCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
				code, data, err := n.do(reqCtx, http.MethodPost, "/api/v1/push", api.PushRequest{Items: items})
				cancel()
				var res []api.PushResult
				if err == nil && code == http.StatusCreated && json.Unmarshal(data, &res) == nil && len(res) == len(items) {
					for k, r := range res {
						l.note(items[k].TransactionID, r.Status)
					}
					continue
				}
				answer := "error"
				if err == nil {
					answer = "http_" + strconv.Itoa(code)
				}
				for _, it := range items {
					l.note(it.TransactionID, answer)
				}
			}
		})
	}
	return wg.Wait
}

// verifyExactlyOnce checks deliveries against the ledger: every push answered queued,
// duplicate or buffered is delivered exactly once; nothing else is delivered more
// than once, and nothing is delivered that was never sent. It returns a summary.
func verifyExactlyOnce(t *testing.T, l *ledger, delivered map[string]int) string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	acked, unanswered, unansweredDelivered := 0, 0, 0
	var missing []string
	for id, st := range l.status {
		switch st {
		case "queued", "buffered", "duplicate":
			acked++
			if delivered[id] != 1 {
				missing = append(missing, fmt.Sprintf("%s(%s, delivered %d)", id, st, delivered[id]))
			}
		default:
			unanswered++
			if delivered[id] > 0 {
				unansweredDelivered++
			}
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "acknowledged pushes not delivered exactly once")
	for id, n := range delivered {
		_, sent := l.status[id]
		require.True(t, sent, "delivered %s, which was never pushed", id)
		require.Equal(t, 1, n, "%s delivered %d times", id, n)
	}
	keys := make([]string, 0, len(l.counts))
	for k := range l.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, l.counts[k]))
	}
	return fmt.Sprintf("pushed %d (%s); acknowledged %d, all delivered exactly once; not acknowledged %d, of which %d delivered once",
		len(l.status), strings.Join(parts, " "), acked, unanswered, unansweredDelivered)
}

// verifyPushOrder checks that each partition delivers every producer's pushes in
// the order it made them (its pushes are sequential: ids w<producer>-<seq>-<k>).
func verifyPushOrder(t *testing.T, order map[string][]string) {
	t.Helper()
	for p, ids := range order {
		last := map[string]string{}
		for _, id := range ids {
			producer := id[:strings.IndexByte(id, '-')]
			require.Greater(t, id, last[producer], "partition %s delivers %s after %s", p, id, last[producer])
			last[producer] = id
		}
	}
}

// startNode starts a broker in process as o says and reaches it over HTTP.
func startNode(t *testing.T, o daemontest.Options) *node {
	t.Helper()
	return newNode(daemontest.Start(t, o).URL)
}

// outage is four producers pushing batches to queue q through n while a test takes
// its PostgreSQL away, recording every answer.
type outage struct {
	t          *testing.T
	n          *node
	q          string
	l          *ledger
	stop, wait func()
}

func startOutage(t *testing.T, n *node, q string) *outage {
	ctx, stop := context.WithCancel(context.Background())
	o := &outage{t: t, n: n, q: q, l: newLedger(), stop: stop}
	o.wait = produce(ctx, n, q, 4, o.l)
	return o
}

// grow waits (a minute at most) until by more pushes were answered status.
func (o *outage) grow(status string, by int, what string) {
	o.t.Helper()
	from := o.l.count(status)
	require.Eventually(o.t, func() bool { return o.l.count(status) >= from+by }, 60*time.Second, 5*time.Millisecond, what)
}

// finish stops the producers, waits for the spool to drain, and checks that every
// acknowledged push is delivered exactly once and in each producer's order. It
// returns the ledger's summary, the deliveries and the spool's state.
func (o *outage) finish() (summary string, delivered int, st api.BufferStatus) {
	o.t.Helper()
	o.stop()
	o.wait()
	st = o.n.waitDrained(o.t, 60*time.Second)
	require.Zero(o.t, st.Failed, "nothing quarantined")
	got, order := o.n.consumeInOrder(o.t, o.q, "audit")
	summary = verifyExactlyOnce(o.t, o.l, got)
	verifyPushOrder(o.t, order)
	return summary, len(got), st
}

// TestOutagePostgreSQLStoppedTwice is the outage test: producers push continuously
// through a broker whose own PostgreSQL is stopped with pg_ctl stop -m immediate
// and started again, twice. Every push answered queued or buffered is delivered
// exactly once to a consumer group afterwards, and each partition keeps every
// producer's push order across the outages.
func TestOutagePostgreSQLStoppedTwice(t *testing.T) {
	t.Parallel()
	cluster := pgtest.StartCluster(t)
	n := startNode(t, daemontest.Options{DBURL: cluster.URL(),
		Env: []string{"LOG_LEVEL=error", "DB_CONNECTION_TIMEOUT=2000", "FILE_BUFFER_FLUSH_MS=20"}})
	o := startOutage(t, n, "outage")
	o.grow("queued", 100, "pushes never got through before the first outage")
	for round := 1; round <= 2; round++ {
		cluster.Stop()
		o.grow("buffered", 200, fmt.Sprintf("outage %d: pushes were not buffered", round))
		cluster.Start()
		o.grow("queued", 100, fmt.Sprintf("after outage %d: pushes never reached the database again", round))
	}
	summary, delivered, st := o.finish()
	t.Logf("outage test (2 × pg_ctl stop -m immediate): %s; %d delivered; spool replayed %d, corrupt regions %d",
		summary, delivered, st.Replayed, st.CorruptRegions)
}

// buildQueen builds the daemon binary (cmd/queen) into a temporary directory.
func buildQueen(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go tool must be on PATH")
	bin := filepath.Join(t.TempDir(), "queen")
	out, err := exec.Command(goTool, "build", "-o", bin, "github.com/queenmq/queen/cmd/queen").CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)
	return bin
}

// child is the queen binary running as a child process.
type child struct {
	cmd    *exec.Cmd
	out    *testlog.Buffer
	exited chan struct{}
	err    error // Wait's result, once exited is closed
}

func startChild(t *testing.T, bin string, env []string, base string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(bin), out: &testlog.Buffer{}, exited: make(chan struct{})}
	c.cmd.Env = env
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	require.NoError(t, c.cmd.Start())
	go func() { c.err = c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.exited
		if t.Failed() {
			t.Logf("child output:\n%s", c.out.String())
		}
	})
	n := newNode(base)
	require.Eventually(t, func() bool {
		code, _, err := n.do(t.Context(), http.MethodGet, "/health/ready", nil)
		return err == nil && code == http.StatusOK
	}, startTimeout, 20*time.Millisecond, "child broker not ready: %s", c.out)
	return c
}

// wait returns the child's exit, or fails the test after within.
func (c *child) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case <-c.exited:
		return c.err
	case <-time.After(within):
		t.Fatalf("the child did not exit within %s", within)
		return nil
	}
}

func freeTCPPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// TestCrashWithSpoolReplaysOnRestart is the crash test: the broker binary is killed
// with SIGKILL while producers push into its spool (push maintenance on); on restart
// the spool drains fully, and nothing acknowledged is lost or duplicated.
func TestCrashWithSpoolReplaysOnRestart(t *testing.T) {
	t.Parallel()
	bin := buildQueen(t)
	dbURL := pgtest.NewDBURL(t)
	dir := t.TempDir()
	port := freeTCPPort(t)
	env := append(daemontest.PGEnv(t, dbURL),
		"FILE_BUFFER_DIR="+dir, "HOST=127.0.0.1", "PORT="+port, "LOG_LEVEL=info",
		"DB_POOL_SIZE=6", "FILE_BUFFER_EVENTS_PER_FILE=300", "PATH="+os.Getenv("PATH"))
	base := "http://127.0.0.1:" + port
	n := newNode(base)

	first := startChild(t, bin, env, base)
	n.setMaintenance(t, true)
	l := newLedger()
	ctx, stop := context.WithCancel(context.Background())
	wait := produce(ctx, n, "crash", 4, l)
	require.Eventually(t, func() bool { return l.count("buffered") >= 1500 }, 60*time.Second, 5*time.Millisecond)
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL)) // producers still pushing
	err := first.wait(t, stopTimeout)
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr)
	require.Equal(t, "signal: killed", exitErr.Error())
	stop()
	wait()
	segments, err := filepath.Glob(filepath.Join(dir, "segment-*.spool"))
	require.NoError(t, err)
	require.NotEmpty(t, segments, "the spool is not empty after the crash")

	second := startChild(t, bin, env, base)
	st := n.buffers(t)
	require.GreaterOrEqual(t, st.Pending, int64(l.count("buffered")), "every buffered push survived the crash")
	n.setMaintenance(t, false)
	st = n.waitDrained(t, 60*time.Second)
	delivered, order := n.consumeInOrder(t, "crash", "audit")
	summary := verifyExactlyOnce(t, l, delivered)
	verifyPushOrder(t, order)
	left, err := filepath.Glob(filepath.Join(dir, "segment-*.spool"))
	require.NoError(t, err)
	require.Empty(t, left, "the drained spool has no segment left")

	require.NoError(t, second.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, second.wait(t, stopTimeout), "clean exit after SIGTERM")
	t.Logf("crash test (SIGKILL with %d segment files): %s; %d delivered; spool replayed %d, corrupt regions %d",
		len(segments), summary, len(delivered), st.Replayed, st.CorruptRegions)
}

// TestDiskFullRefusesPushes is the disk-full test: the spool sits on a 64 KiB tmpfs
// (as root) or in a read-only directory (otherwise). Under push maintenance, once
// the spool cannot take a push every push is answered 503, never 2xx, and exactly
// the pushes answered buffered are replayed.
func TestDiskFullRefusesPushes(t *testing.T) {
	t.Parallel()
	dir, readOnly := unwritableSpoolDir(t)
	n := startNode(t, daemontest.Options{SpoolDir: dir, Env: []string{"LOG_LEVEL=error", "DB_POOL_SIZE=6"}})
	if readOnly != nil {
		readOnly()
	}
	n.setMaintenance(t, true)
	pad := strings.Repeat("x", 4000)
	var buffered []string
	refused, refusedAfter := 0, 0
	for i := 0; refusedAfter < 20; i++ {
		require.Less(t, i, 500, "the spool never filled up")
		id := fmt.Sprintf("full-%03d", i)
		code, data, err := n.do(t.Context(), http.MethodPost, "/api/v1/push", api.PushRequest{Items: []api.PushItem{
			{Queue: "full", TransactionID: id, Payload: json.RawMessage(`{"pad":"` + pad + `"}`)}}})
		require.NoError(t, err)
		switch code {
		case http.StatusCreated:
			require.Zero(t, refused, "a push succeeded after the spool was found full: %s", data)
			buffered = append(buffered, id)
		case http.StatusServiceUnavailable:
			var eb api.ErrorBody
			require.NoError(t, json.Unmarshal(data, &eb))
			require.Equal(t, api.ErrorCodeUnavailable, eb.Code)
			require.Contains(t, eb.Error, "spool cannot be written")
			refused++
			refusedAfter++
		default:
			t.Fatalf("push answered %d: %s", code, data)
		}
	}
	st := n.buffers(t)
	require.False(t, st.Healthy)
	require.EqualValues(t, len(buffered), st.Pending)
	if readOnly == nil {
		require.Positive(t, len(buffered), "the tmpfs took some pushes before it was full")
	}

	n.setMaintenance(t, false)
	n.waitDrained(t, 30*time.Second)
	delivered := n.consume(t, "full", "audit")
	want := map[string]int{}
	for _, id := range buffered {
		want[id] = 1
	}
	require.Equal(t, want, delivered, "exactly the pushes answered buffered")
	mode := "64 KiB tmpfs"
	if readOnly != nil {
		mode = "read-only directory"
	}
	t.Logf("disk-full test (%s): %d pushes buffered, then %d refused with 503 and none accepted", mode, len(buffered), refused)
}

// unwritableSpoolDir returns a directory for the spool that fills up quickly: a
// 64 KiB tmpfs as root; otherwise a directory that the returned function makes
// read-only after the broker has opened its spool (root ignores permissions, so
// that variant only runs as another user).
func unwritableSpoolDir(t *testing.T) (string, func()) {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		return dir, func() { require.NoError(t, os.Chmod(dir, 0o555)); t.Cleanup(func() { _ = os.Chmod(dir, 0o755) }) }
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("root but cannot mount a tmpfs here (%v: %s); run as another user for the read-only variant", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir, nil
}

// TestStartWithPostgreSQLDown: a broker started while its database refuses
// connections answers pushes "buffered" at once and shows them in
// /api/v1/status/buffers (the start gate holds the other routes), becomes ready when
// the database comes back, and replays them.
func TestStartWithPostgreSQLDown(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDBURL(t)
	restore := pgtest.CutOff(t, dbURL)
	// NoWait: the broker becomes ready only once the database is back.
	n := startNode(t, daemontest.Options{DBURL: dbURL, NoWait: true, Env: []string{"LOG_LEVEL=error", "DB_POOL_SIZE=4"}})

	var res []api.PushResult
	n.must(t, http.MethodPost, "/api/v1/push", api.PushRequest{Items: []api.PushItem{
		{Queue: "early", TransactionID: "e-1", Payload: json.RawMessage(`1`)},
		{Queue: "early", TransactionID: "e-2", Payload: json.RawMessage(`2`)}}}, http.StatusCreated, &res)
	require.Equal(t, api.PushStatusBuffered, res[0].Status)
	require.Equal(t, api.PushStatusBuffered, res[1].Status)
	st := n.buffers(t)
	require.EqualValues(t, 2, st.Pending, "the backlog is visible before the database is back")
	require.False(t, st.DBHealthy)
	code, _, err := n.do(t.Context(), http.MethodGet, "/health/ready", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, code, "not ready while the database is down")

	restore()
	require.Eventually(t, func() bool {
		code, _, err := n.do(t.Context(), http.MethodGet, "/health/ready", nil)
		return err == nil && code == http.StatusOK
	}, startTimeout, 20*time.Millisecond)
	n.waitDrained(t, 30*time.Second)
	require.Equal(t, map[string]int{"e-1": 1, "e-2": 1}, n.consume(t, "early", "g"))
}

// scrape reads /metrics/prometheus into name → samples (label set rendered as
// "k=v,..." → value).
func (n *node) scrape(t *testing.T) map[string]map[string]float64 {
	t.Helper()
	code, body, err := n.do(t.Context(), http.MethodGet, "/metrics/prometheus", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	require.NoError(t, err)
	out := map[string]map[string]float64{}
	for name, mf := range mfs {
		out[name] = map[string]float64{}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
			out[name][strings.Join(labels, ",")] = v
		}
	}
	return out
}

// TestSpoolAndJobsObservable: the spool's depth, bytes and age are in
// /api/v1/status/buffers, /api/v1/system/maintenance and the metrics (queen's and
// upstream's names), and the maintenance jobs run and are counted.
func TestSpoolAndJobsObservable(t *testing.T) {
	t.Parallel()
	n := startNode(t, daemontest.Options{Env: []string{"RETENTION_INTERVAL=200", "EVICTION_INTERVAL=200"}})
	n.setMaintenance(t, true)
	var res []api.PushResult
	n.must(t, http.MethodPost, "/api/v1/push", api.PushRequest{Items: []api.PushItem{
		{Queue: "obs", Payload: json.RawMessage(`1`)}, {Queue: "obs", Payload: json.RawMessage(`2`)},
		{Queue: "obs", TransactionID: "mine", Payload: json.RawMessage(`3`)}}}, http.StatusCreated, &res)
	require.Equal(t, []string{"buffered", "buffered", "buffered"}, []string{res[0].Status, res[1].Status, res[2].Status})
	require.Empty(t, res[0].TransactionIDCamel, "a generated transaction id is not echoed (upstream)")
	require.Equal(t, "mine", res[2].TransactionIDCamel)

	st := n.buffers(t)
	require.EqualValues(t, 3, st.Pending)
	require.Positive(t, st.PendingBytes)
	require.Equal(t, 1, st.Segments)
	require.True(t, st.Healthy)
	require.True(t, st.DBHealthy)
	var ms api.MaintenanceStatus
	n.must(t, http.MethodGet, "/api/v1/system/maintenance", nil, http.StatusOK, &ms)
	require.True(t, ms.MaintenanceMode)
	require.EqualValues(t, 3, ms.BufferedMessages)
	require.EqualValues(t, 3, ms.BufferStats.PendingCount)
	require.True(t, ms.BufferHealthy)

	m := n.scrape(t)
	for name, want := range map[string]float64{"queen_spool_pending_records": 3, "queen_file_buffer_pending": 3,
		"queen_spool_failed_records": 0, "queen_file_buffer_failed": 0, "queen_file_buffer_db_healthy": 1,
		"queen_spool_healthy": 1, "queen_spool_segments": 1} {
		require.Contains(t, m, name)
		require.Equal(t, want, m[name][""], name)
	}
	require.Positive(t, m["queen_spool_bytes"][""])
	require.Contains(t, m, "queen_spool_oldest_age_seconds")

	n.setMaintenance(t, false)
	n.waitDrained(t, 10*time.Second)
	require.Len(t, n.consume(t, "obs", "g"), 3)
	require.Eventually(t, func() bool {
		m := n.scrape(t)
		return m["queen_spool_pending_records"][""] == 0 &&
			m["queen_maintenance_runs_total"]["job=retention,result=success"] >= 1 &&
			m["queen_maintenance_runs_total"]["job=lease_reclaim,result=success"] >= 1 &&
			m["queen_maintenance_run_duration_seconds"]["job=metrics_cleanup"] >= 1
	}, 20*time.Second, 50*time.Millisecond, "the jobs run every 200 ms and are counted")
}
