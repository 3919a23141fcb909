package meter_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/proxy/meter"
	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
	"github.com/queenmq/queen/internal/testclock"
	"github.com/queenmq/queen/internal/testlog"
	"github.com/queenmq/queen/internal/testwait"
)

type testBundle struct {
	dbURL string
	clock *testclock.Clock
	reg   *prometheus.Registry
	meter *meter.Meter
	store *store.Store
}

func openStore(t *testing.T, dbURL string) *store.Store {
	t.Helper()
	st, err := store.Open(store.Options{ConnString: dbURL, MaxConns: 4, StatementTimeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	return st
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	// Mid-minute, so that adding seconds stays in the minute.
	start := time.Now().UTC().Truncate(time.Minute).Add(20 * time.Second)
	b := &testBundle{dbURL: pgtest.NewDBURL(t), clock: testclock.New(start), reg: prometheus.NewRegistry()}
	b.meter = meter.New(b.clock.Now, b.reg)
	b.store = openStore(t, b.dbURL)
	require.NoError(t, b.store.ApplySchema(t.Context()))
	return b
}

// flushes is queen_proxy_usage_flushes_total{result}.
func (b *testBundle) flushes(t *testing.T, result string) float64 {
	t.Helper()
	mfs, err := b.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "queen_proxy_usage_flushes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// stored is the tenant's usage of the minute in the database.
func (b *testBundle) stored(t *testing.T, tenantID string, minute time.Time) tenant.Usage {
	t.Helper()
	points, err := b.store.UsageSeries(t.Context(), tenantID, minute, minute.Add(time.Minute), tenant.GranularityMinute)
	require.NoError(t, err)
	if len(points) == 0 {
		return tenant.Usage{}
	}
	require.Len(t, points, 1)
	return points[0].Usage
}

func request(n int64) func(*tenant.Usage) {
	return func(u *tenant.Usage) { u.Requests++; u.MessagesIn += n }
}

func TestAddCountsPerTenantAndMinute(t *testing.T) {
	t.Parallel()
	c := testclock.New(time.Date(2026, 3, 1, 12, 0, 10, 0, time.UTC))
	m := meter.New(c.Now, prometheus.NewRegistry())
	require.Empty(t, m.Pending())

	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { m.Add("acme", request(2)) })
	}
	wg.Wait()
	m.Add("beta", request(1))
	m.SetStored("acme", 100, 2048, 3)
	c.Advance(time.Minute)
	m.Add("acme", request(5))

	byKey := map[string]tenant.UsagePoint{}
	for _, p := range m.Pending() {
		byKey[p.Tenant+" "+p.Start.Format("15:04")] = p
	}
	require.Len(t, byKey, 3)
	require.Equal(t, tenant.Usage{Requests: 10, MessagesIn: 20, StoredMessages: 100, StoredBytes: 2048, Queues: 3},
		byKey["acme 12:00"].Usage, "counts of the minute, with the latest gauges")
	require.Equal(t, tenant.Usage{Requests: 1, MessagesIn: 5, StoredMessages: 100, StoredBytes: 2048, Queues: 3},
		byKey["acme 12:01"].Usage)
	require.Equal(t, tenant.Usage{Requests: 1, MessagesIn: 1}, byKey["beta 12:00"].Usage, "no snapshot, no gauges")
	require.Equal(t, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), byKey["beta 12:00"].Start)
}

func TestFlushReplacesAndForgetsClosedMinutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	logger := testlog.Logger(t)
	m0 := b.clock.Now().Truncate(time.Minute)

	require.NoError(t, b.meter.Flush(ctx, b.store, "r1", logger), "nothing to flush")
	require.Zero(t, b.flushes(t, "ok"), "an empty flush writes nothing")

	b.meter.Add("acme", request(3))
	require.NoError(t, b.meter.Flush(ctx, b.store, "r1", logger))
	require.Equal(t, tenant.Usage{Requests: 1, MessagesIn: 3}, b.stored(t, "acme", m0))
	require.Len(t, b.meter.Pending(), 1, "the current minute is kept: it still counts")

	b.meter.Add("acme", request(4))
	require.NoError(t, b.meter.Flush(ctx, b.store, "r1", logger))
	require.Equal(t, tenant.Usage{Requests: 2, MessagesIn: 7}, b.stored(t, "acme", m0), "replaced by the whole count, not added")

	b.clock.Advance(time.Minute)
	b.meter.SetStored("acme", 9, 99, 1)
	require.NoError(t, b.meter.Flush(ctx, b.store, "r1", logger))
	require.Empty(t, b.meter.Pending(), "a closed minute, once written, is forgotten")
	require.Equal(t, tenant.Usage{Requests: 2, MessagesIn: 7, StoredMessages: 9, StoredBytes: 99, Queues: 1},
		b.stored(t, "acme", m0), "the last flush carried the gauges")
	require.InDelta(t, 3, b.flushes(t, "ok"), 0)

	// Another replica's count of the same minute adds up.
	other := meter.New(func() time.Time { return m0.Add(time.Second) }, prometheus.NewRegistry())
	other.Add("acme", func(u *tenant.Usage) { u.Requests = 5 })
	require.NoError(t, other.Flush(ctx, b.store, "r2", logger))
	require.Equal(t, int64(7), b.stored(t, "acme", m0).Requests)
}

func TestFlushFailureKeepsThenDropsMinutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	down := openStore(t, b.dbURL)
	down.Close()
	m0 := b.clock.Now().Truncate(time.Minute)

	b.meter.Add("acme", request(1))
	b.clock.Advance(time.Minute)
	b.meter.Add("acme", request(1))
	err := b.meter.Flush(ctx, down, "r1", logger)
	require.ErrorIs(t, err, tenant.ErrUnavailable)
	require.Len(t, b.meter.Pending(), 2, "kept for a later flush")
	require.InDelta(t, 1, b.flushes(t, "error"), 0)
	require.Empty(t, logs.String(), "nothing dropped, nothing logged")

	// An hour on, the first minute is past keeping; the second is not yet.
	b.clock.Advance(60 * time.Minute)
	require.ErrorIs(t, b.meter.Flush(ctx, down, "r1", logger), tenant.ErrUnavailable)
	pending := b.meter.Pending()
	require.Len(t, pending, 1)
	require.Equal(t, m0.Add(time.Minute), pending[0].Start)
	require.Contains(t, logs.String(), "level=ERROR")
	require.Contains(t, logs.String(), "minutes=1")

	// The store back, what was kept is written.
	require.NoError(t, b.meter.Flush(ctx, b.store, "r1", logger))
	require.Equal(t, int64(1), b.stored(t, "acme", m0.Add(time.Minute)).Requests)
	require.Zero(t, b.stored(t, "acme", m0).Requests, "the dropped minute is lost")
	require.Empty(t, b.meter.Pending())
}

func TestRunnerFlushesPeriodicallyAndAtTheStop(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(t.Context())
	m0 := b.clock.Now().Truncate(time.Minute)

	// A closed hour not yet rolled up: the runner's rollup picks it up.
	closed := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour)
	require.NoError(t, b.store.UsageUpsert(ctx, "old", []tenant.UsagePoint{{Tenant: "acme", Start: closed,
		Usage: tenant.Usage{Requests: 42}}}))

	r := &meter.Runner{Meter: b.meter, Store: b.store, ReplicaID: "r1", Interval: 20 * time.Millisecond, Logger: testlog.Logger(t)}
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	b.meter.Add("acme", request(1))
	testwait.For(t, 10*time.Second, 10*time.Millisecond, func() error {
		if got := b.stored(t, "acme", m0).Requests; got != 1 {
			return fmt.Errorf("stored %d requests", got)
		}
		return nil
	})
	testwait.For(t, 10*time.Second, 10*time.Millisecond, func() error {
		hours, err := b.store.UsageSeries(t.Context(), "acme", closed, closed.Add(time.Hour), tenant.GranularityHour)
		if err != nil || len(hours) != 1 || hours[0].Requests != 42 {
			return fmt.Errorf("hours %v, %v", hours, err)
		}
		return nil
	})

	b.meter.Add("acme", request(1))
	cancel()
	<-done
	require.Equal(t, int64(2), b.stored(t, "acme", m0).Requests, "flushed a last time at the stop")
}
