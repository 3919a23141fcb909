package telemetry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
	"github.com/queenmq/queen/internal/telemetry"
	"github.com/queenmq/queen/internal/testlog"
)

type testBundle struct {
	dbURL string
	st    *store.Store
	b     *broker.Broker
	reg   *prometheus.Registry
	tel   *telemetry.Telemetry
	logs  *logBuffer
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	dbURL := pgtest.NewDBURL(t)
	st, err := store.Open(store.Options{ConnString: dbURL, MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	logs := &logBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b := broker.New(broker.DefaultConfig(), st, logger)
	reg := prometheus.NewRegistry()
	tel, err := telemetry.New(reg, telemetry.Options{Broker: b, Store: st, Logger: logger})
	require.NoError(t, err)
	return &testBundle{dbURL: dbURL, st: st, b: b, reg: reg, tel: tel, logs: logs}
}

func (tb *testBundle) push(t *testing.T, q string, n int) {
	t.Helper()
	items := make([]queue.PushItem, n)
	for i := range items {
		items[i] = queue.PushItem{Queue: q, Payload: json.RawMessage(`{}`)}
	}
	_, err := tb.b.Push(t.Context(), items)
	require.NoError(t, err)
}

// gauge returns the value of the one sample of name whose labels include labels.
func (tb *testBundle) gauge(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	v, ok := tb.lookup(t, name, labels...)
	require.True(t, ok, "no sample %s%v", name, labels)
	return v
}

func (tb *testBundle) lookup(t *testing.T, name string, labels ...string) (float64, bool) {
	t.Helper()
	mfs, err := tb.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// setConnections allows or forbids new connections to the bundle's database and, when
// forbidding, ends the open ones: a PostgreSQL outage for this database only.
func (tb *testBundle) setConnections(t *testing.T, allow bool) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context()) // also used from a cleanup
	u, err := url.Parse(tb.dbURL)
	require.NoError(t, err)
	name := pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()
	admin, err := pgx.Connect(ctx, pgtest.URL(t))
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s WITH ALLOW_CONNECTIONS %t", name, allow))
	require.NoError(t, err)
	if !allow {
		_, err = admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`,
			strings.TrimPrefix(u.Path, "/"))
		require.NoError(t, err)
	}
}

// logBuffer collects JSON log lines; safe for concurrent use.
type logBuffer struct{ testlog.Buffer }

// lines returns the decoded lines whose msg is msg, and their raw text.
func (l *logBuffer) lines(t *testing.T, msg string) ([]map[string]any, []string) {
	t.Helper()
	text := l.String()
	var out []map[string]any
	var raw []string
	for line := range strings.Lines(text) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "log line %q", line)
		if m["msg"] == msg {
			out = append(out, m)
			raw = append(raw, line)
		}
	}
	return out, raw
}

func TestRefresh(t *testing.T) {
	t.Parallel()

	t.Run("ReplacesTheCachedBacklog", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.push(t, "tel-a", 2)
		_, ok := tb.lookup(t, "queen_queue_messages", "queue", "tel-a")
		require.False(t, ok, "nothing is served before the first refresh")

		require.NoError(t, tb.tel.Refresh(t.Context()))
		require.Equal(t, 2.0, tb.gauge(t, "queen_queue_messages", "queue", "tel-a", "state", "pending"))
		age := tb.gauge(t, "queen_queue_oldest_pending_age_seconds", "queue", "tel-a")
		require.GreaterOrEqual(t, age, 0.0)
		require.Less(t, age, 60.0, "a fresh message is at most moments old")

		tb.push(t, "tel-a", 3)
		tb.push(t, "tel-b", 1)
		require.Equal(t, 2.0, tb.gauge(t, "queen_queue_messages", "queue", "tel-a", "state", "pending"),
			"a scrape serves the cache; it runs no SQL")
		require.NoError(t, tb.tel.Refresh(t.Context()))
		require.Equal(t, 5.0, tb.gauge(t, "queen_queue_messages", "queue", "tel-a", "state", "pending"))
		require.Equal(t, 1.0, tb.gauge(t, "queen_queue_messages", "queue", "tel-b", "state", "total"))
		require.Equal(t, 1.0, tb.gauge(t, "queen_metrics_refresh_success"))
		require.Equal(t, 0.0, tb.gauge(t, "queen_metrics_refresh_truncated"))
		require.Greater(t, tb.gauge(t, "queen_metrics_refresh_duration_seconds"), 0.0)

		_, err := tb.b.QueueDelete(t.Context(), "tel-b")
		require.NoError(t, err)
		require.NoError(t, tb.tel.Refresh(t.Context()))
		_, ok = tb.lookup(t, "queen_queue_messages", "queue", "tel-b")
		require.False(t, ok, "a deleted queue's series disappear")
	})

	t.Run("OutageOmitsBacklogFamiliesAndRecovers", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.push(t, "tel-outage", 1)
		require.NoError(t, tb.tel.Refresh(t.Context()))
		before := tb.gauge(t, "queen_metrics_refresh_timestamp_seconds")

		tb.setConnections(t, false)
		t.Cleanup(func() { tb.setConnections(t, true) })
		require.ErrorIs(t, tb.tel.Refresh(t.Context()), queue.ErrUnavailable)
		require.ErrorIs(t, tb.tel.Refresh(t.Context()), queue.ErrUnavailable)
		require.Equal(t, 0.0, tb.gauge(t, "queen_metrics_refresh_success"))
		require.Equal(t, before, tb.gauge(t, "queen_metrics_refresh_timestamp_seconds"), "the last success is kept")
		for _, name := range []string{"queen_queue_messages", "queen_dlq_depth", "queen_queue_oldest_pending_age_seconds"} {
			_, ok := tb.lookup(t, name)
			require.False(t, ok, "%s is omitted while the database is away", name)
		}
		failed, _ := tb.logs.lines(t, "backlog metrics refresh failed")
		require.Len(t, failed, 2)
		require.Equal(t, "WARN", failed[0]["level"], "the first failure is a warning")
		require.Equal(t, "DEBUG", failed[1]["level"], "repeats are not")

		tb.setConnections(t, true)
		require.Eventually(t, func() bool { return tb.tel.Refresh(t.Context()) == nil }, 10*time.Second, 20*time.Millisecond)
		require.Equal(t, 1.0, tb.gauge(t, "queen_metrics_refresh_success"))
		require.Equal(t, 1.0, tb.gauge(t, "queen_queue_messages", "queue", "tel-outage", "state", "pending"))
		recovered, _ := tb.logs.lines(t, "backlog metrics refresh recovered")
		require.Len(t, recovered, 1)
		require.Equal(t, "INFO", recovered[0]["level"])
	})

	t.Run("RunRefreshesAtOnceAndStopsWithContext", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.push(t, "tel-run", 1)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			tb.tel.Run(ctx)
		}()
		require.Eventually(t, func() bool {
			v, ok := tb.lookup(t, "queen_queue_messages", "queue", "tel-run", "state", "pending")
			return ok && v == 1
		}, 10*time.Second, 10*time.Millisecond)
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
	})
}

func TestNew(t *testing.T) {
	t.Parallel()

	t.Run("RefusesADuplicateRegistration", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		_, err := telemetry.New(tb.reg, telemetry.Options{Broker: tb.b, Store: tb.st})
		var are prometheus.AlreadyRegisteredError
		require.ErrorAs(t, err, &are)
	})

	t.Run("ExportsLiveGaugesWithoutRefresh", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		require.Equal(t, 4.0, tb.gauge(t, "queen_db_pool_max_connections"))
		require.Equal(t, 4.0, tb.gauge(t, "queen_db_pool_size"))
		require.Equal(t, 0.0, tb.gauge(t, "queen_pop_longpolls_parked"))
		require.Equal(t, 0.0, tb.gauge(t, "queen_metrics_refresh_success"), "no refresh has run")
		require.Greater(t, tb.gauge(t, "queen_uptime_seconds"), 0.0)

		tb.push(t, "tel-pool", 1) // opens a connection, which is then idle
		require.Equal(t, 1.0, tb.gauge(t, "queen_db_pool_connections", "state", "idle")+
			tb.gauge(t, "queen_db_pool_connections", "state", "acquired"))
		require.Equal(t, tb.gauge(t, "queen_db_pool_idle"), tb.gauge(t, "queen_db_pool_connections", "state", "idle"))
		require.Equal(t, 0.0, tb.gauge(t, "queen_db_pool_active"))
	})

	t.Run("NamesPassLint", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.push(t, "tel-lint", 1)
		require.NoError(t, tb.tel.Refresh(t.Context()))
		problems, err := testutil.GatherAndLint(tb.reg)
		require.NoError(t, err)
		require.Empty(t, problems)
	})
}

func TestBuildInfo(t *testing.T) {
	t.Parallel()
	c := telemetry.NewBuildInfo("1.2.3", "abc1234")
	want := fmt.Sprintf(`# HELP queen_build_info Always 1; the labels name the version, VCS revision and Go toolchain of the binary: join on it to show what each replica runs.
# TYPE queen_build_info gauge
queen_build_info{goversion=%q,revision="abc1234",version="1.2.3"} 1
`, runtime.Version())
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want)))
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	require.Empty(t, problems)
}

func (tb *testBundle) popAck(t *testing.T, q string, batch int, statuses ...string) {
	t.Helper()
	req := queue.PopRequest{Queue: q, Batch: batch}
	require.NoError(t, tb.b.NormalizePop(&req))
	res, err := tb.b.Pop(t.Context(), req)
	require.NoError(t, err)
	require.Len(t, res.Messages, batch)
	acks := make([]queue.Ack, len(statuses))
	for i, s := range statuses {
		m := res.Messages[i]
		acks[i] = queue.Ack{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: res.LeaseID, Status: s}
	}
	_, err = tb.b.Ack(t.Context(), queue.Scope{}, "", acks)
	require.NoError(t, err)
}

func TestActivityCounters(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	_, ok := tb.lookup(t, "queen_messages_pushed_total", "queue", "tel-act")
	require.False(t, ok, "a queue appears with its first operation")
	require.Equal(t, 0.0, tb.gauge(t, "queen_requests_total", "op", "push"))

	tb.push(t, "tel-act", 3)
	tb.popAck(t, "tel-act", 2, queue.AckCompleted, queue.AckDLQ)

	require.Equal(t, 3.0, tb.gauge(t, "queen_messages_pushed_total", "queue", "tel-act"))
	require.Equal(t, 2.0, tb.gauge(t, "queen_messages_popped_total", "queue", "tel-act"))
	require.Equal(t, 1.0, tb.gauge(t, "queen_messages_acked_total", "queue", "tel-act", "result", "success"))
	require.Equal(t, 1.0, tb.gauge(t, "queen_messages_acked_total", "queue", "tel-act", "result", "failed"))
	require.Equal(t, 1.0, tb.gauge(t, "queen_messages_dead_lettered_total", "queue", "tel-act"))
	for _, op := range []string{"push", "pop", "ack"} {
		require.Equal(t, 1.0, tb.gauge(t, "queen_requests_total", "op", op), op)
	}
	require.Equal(t, 0.0, tb.gauge(t, "queen_requests_total", "op", "transaction"))
	require.Equal(t, 0.0, tb.gauge(t, "queen_db_errors_total"))
	require.Equal(t, 1.0, tb.gauge(t, "queen_push_statements_total"), "one push, one statement")
	require.Equal(t, 1.0, tb.gauge(t, "queen_push_statement_pushes_total"))
	require.Equal(t, 0.0, tb.gauge(t, "queen_push_wait_expired_total"))
	require.Equal(t, 0.0, tb.gauge(t, "queen_push_waiting"))
}

func TestRateLog(t *testing.T) {
	t.Parallel()

	t.Run("LogsRatesAndSizes", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.tel.LogRates(t.Context())
		lines, _ := tb.logs.lines(t, telemetry.RateLogMessage)
		require.Len(t, lines, 1)
		first := lines[0]
		require.Equal(t, "INFO", first["level"])
		require.Equal(t, "unavailable", first["backlog"], "no refresh has run yet")
		require.NotContains(t, first, "top_queues")
		require.NotContains(t, first, "maintenance_push", "maintenance flags appear only when on")
		require.Equal(t, 0.0, first["push_per_sec"])
		require.Equal(t, 4.0, first["db_pool_max"])

		// Seven queues with 1..7 pending messages, one of them half consumed.
		for i := 1; i <= 7; i++ {
			tb.push(t, fmt.Sprintf("tel-rate-%d", i), i)
		}
		tb.popAck(t, "tel-rate-7", 4, queue.AckCompleted, queue.AckCompleted, queue.AckCompleted, queue.AckCompleted)
		require.NoError(t, tb.tel.Refresh(t.Context()))
		tb.tel.LogRates(t.Context())

		lines, raw := tb.logs.lines(t, telemetry.RateLogMessage)
		require.Len(t, lines, 2)
		l := lines[1]
		for _, k := range []string{"window", "push_per_sec", "pop_per_sec", "ack_per_sec", "parked_longpolls",
			"db_pool_in_use", "db_pool_max", "pending_messages", "dlq_messages", "top_queues"} {
			require.Contains(t, l, k)
		}
		require.NotContains(t, l, "backlog")
		require.NotContains(t, l, "spool_pending", "no spool yet: nothing is made up")
		require.Greater(t, l["push_per_sec"], 0.0, "28 messages were pushed since the first line")
		require.Greater(t, l["pop_per_sec"], 0.0)
		require.Greater(t, l["ack_per_sec"], 0.0)
		require.Equal(t, 0.0, l["parked_longpolls"])
		require.Equal(t, 0.0, l["db_pool_in_use"])
		require.Equal(t, 24.0, l["pending_messages"], "1+…+6 plus 3 left of 7")
		require.Equal(t, 0.0, l["dlq_messages"])
		require.Contains(t, raw[1], `"top_queues":{"tel-rate-6":6,"tel-rate-5":5,"tel-rate-4":4,"tel-rate-3":3,"tel-rate-7":3}`,
			"the five deepest, deepest first, ties by name")

		// Nothing happened since: the next line's rates are zero.
		tb.tel.LogRates(t.Context())
		lines, _ = tb.logs.lines(t, telemetry.RateLogMessage)
		require.Equal(t, 0.0, lines[2]["push_per_sec"])
		require.Equal(t, 0.0, lines[2]["pop_per_sec"])
	})

	t.Run("RunRateLogWritesEveryInterval", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			tb.tel.RunRateLog(ctx, 5*time.Millisecond)
		}()
		require.Eventually(t, func() bool {
			lines, _ := tb.logs.lines(t, telemetry.RateLogMessage)
			return len(lines) >= 2
		}, 10*time.Second, 5*time.Millisecond)
		cancel()
		<-done
	})

	t.Run("ZeroIntervalIsOff", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.tel.RunRateLog(t.Context(), 0) // returns at once
		lines, _ := tb.logs.lines(t, telemetry.RateLogMessage)
		require.Empty(t, lines)
	})
}

func TestMaintenanceGauges(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	require.Equal(t, 0.0, tb.gauge(t, "queen_maintenance_mode_enabled"))
	require.Equal(t, 0.0, tb.gauge(t, "queen_pop_maintenance_mode_enabled"))

	_, _, err := tb.b.SetPushPause(t.Context(), true)
	require.NoError(t, err)
	require.Equal(t, 1.0, tb.gauge(t, "queen_maintenance_mode_enabled"))
	require.Equal(t, 0.0, tb.gauge(t, "queen_pop_maintenance_mode_enabled"))
	tb.tel.LogRates(t.Context())
	lines, _ := tb.logs.lines(t, telemetry.RateLogMessage)
	require.Equal(t, true, lines[0]["maintenance_push"], "the rate log says why pushes stopped")
	require.Equal(t, false, lines[0]["maintenance_pop"])

	_, _, err = tb.b.SetPopPause(t.Context(), true)
	require.NoError(t, err)
	_, _, err = tb.b.SetPushPause(t.Context(), false)
	require.NoError(t, err)
	require.Equal(t, 0.0, tb.gauge(t, "queen_maintenance_mode_enabled"))
	require.Equal(t, 1.0, tb.gauge(t, "queen_pop_maintenance_mode_enabled"))
}
