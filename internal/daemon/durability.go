package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/maintenance"
	"github.com/queenmq/queen/internal/spool"
	"github.com/queenmq/queen/internal/store"
)

// openSpool opens the disk spool in FILE_BUFFER_DIR (created if missing, locked
// against a second process). Failing to open it stops the start-up, as upstream
// does when it cannot create the directory: a broker that would answer "buffered"
// without a place to keep it must not run.
func openSpool(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*spool.Spool, error) {
	if err := spool.CheckDir(cfg.FileBufferDir); err != nil {
		// A path through a file is a configuration error (exit 78): restarts cannot fix it.
		return nil, &config.Error{Name: "FILE_BUFFER_DIR", Value: cfg.FileBufferDir, Reason: err.Error()}
	}
	sp, err := spool.Open(spool.Options{
		Dir:              cfg.FileBufferDir,
		EventsPerSegment: cfg.FileBufferEventsPerFile,
		MaxBytes:         cfg.SpoolMaxBytes,
		Logger:           logger.With("component", "spool"),
	})
	if err != nil {
		return nil, fmt.Errorf("daemon: spool (FILE_BUFFER_DIR=%s): %w", cfg.FileBufferDir, err)
	}
	// Earlier releases quarantined records that PostgreSQL refused for reasons of its
	// own (read-only during a failover, a missing privilege): they were acknowledged to
	// their producers, so they are replayed, not left behind.
	if _, err := sp.Requeue(ctx, store.IsServerFaultReason); err != nil {
		logger.Error("spool: could not requeue records quarantined for a database-side reason; they stay in dead/",
			"dir", sp.Dir(), "err", err)
	}
	st := sp.Stats()
	logger.Info("spool opened", "dir", sp.Dir(), "pending_records", st.PendingRecords,
		"pending_bytes", st.PendingBytes, "quarantined_records", st.QuarantinedRecords)
	return sp, nil
}

// closeSpool fsyncs and closes the spool: the last step before the pool closes.
// Whatever is still pending stays on disk and is replayed by the next start.
func closeSpool(sp *spool.Spool, logger *slog.Logger) {
	st := sp.Stats()
	if err := sp.Close(); err != nil {
		logger.Error("spool close failed", "dir", sp.Dir(), "err", err)
		return
	}
	if st.PendingRecords > 0 {
		logger.Warn("spool closed with records not yet replayed; the next start replays them",
			"dir", sp.Dir(), "pending_records", st.PendingRecords)
	}
}

// pushGate lets POST /api/v1/push past the start gate once PostgreSQL has been found
// unreachable at start-up: the broker then spools every push until the schema is
// applied (unlike upstream, queen starts with PostgreSQL down and accepts pushes).
// While the database answers, pushes wait for the start gate like every other route
// (for the few milliseconds the schema takes), so that they are stored in push order.
// A push already waiting when the database is found down goes to the spool then.
// GET /api/v1/status/buffers, which reads the spool only, passes with the pushes, so
// that the backlog they make is visible from the first request.
type pushGate struct {
	down     chan struct{}
	downOnce sync.Once
}

func newPushGate() *pushGate { return &pushGate{down: make(chan struct{})} }

// open lets pushes through: PostgreSQL is down.
func (g *pushGate) open() { g.downOnce.Do(func() { close(g.down) }) }

// wrap routes pushes to direct as soon as the start gate opens or g does; other
// routes, and pushes when the start is abandoned, go to gated.
func (g *pushGate) wrap(start *startGate, gated, direct http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !spoolRoute(r) {
			gated.ServeHTTP(w, r)
			return
		}
		t := time.NewTimer(startHold)
		defer t.Stop()
		select {
		case <-g.down:
		case <-start.opened:
		case <-r.Context().Done():
			return
		case <-start.aborted:
			gated.ServeHTTP(w, r) // answers 503 at once
			return
		case <-t.C:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"success":false,"error":"the broker is starting: waiting for PostgreSQL and the schema","code":"unavailable"}` + "\n"))
			return
		}
		direct.ServeHTTP(w, r)
	})
}

// spoolRoute reports the requests served while PostgreSQL is down at start-up: pushes
// (to the spool) and the spool's status.
func spoolRoute(r *http.Request) bool {
	switch r.URL.Path {
	case "/api/v1/push":
		return r.Method == http.MethodPost
	case "/api/v1/status/buffers":
		return r.Method == http.MethodGet || r.Method == http.MethodHead
	}
	return false
}

// newMaintenance builds the runner of the background jobs (retention, eviction,
// partition clean-up, lookup reconciliation); it runs once the schema is applied.
// instance names this replica in the jobs' claims (the broker's Config.Instance).
func newMaintenance(cfg *config.Config, instance string, st *store.Store, reg prometheus.Registerer, logger *slog.Logger) (*maintenance.Runner, error) {
	day := 24 * time.Hour
	jobs := maintenance.Jobs(st, maintenance.Settings{
		RetentionInterval: cfg.RetentionInterval,
		EvictionInterval:  cfg.EvictionInterval,
		BatchSize:         cfg.RetentionBatchSize,
		EvictionBatchSize: cfg.EvictionBatchSize,
		PartitionIdle:     time.Duration(cfg.PartitionCleanupDays) * day,
		MetricsRetention:  time.Duration(cfg.MetricsRetentionDays) * day,
		DLQRetention:      time.Duration(cfg.DLQRetentionDays) * day,

		LookupReconcileInterval: cfg.PartitionLookupReconcileInterval,
		LookupReconcileLookback: cfg.PartitionLookupReconcileLookback,
		// One consumer-lag sample per analytics bucket: the resolution of its history.
		ConsumerLagInterval: cfg.AnalyticsBucket,
		// Only a broker that scopes tenants computes their usage.
		TenancyUsageInterval: tenancyUsageInterval(cfg),
		AnalyzeInterval:      cfg.AnalyzeInterval,
	})
	r, err := maintenance.New(st, jobs, reg, maintenance.Options{
		Instance: instance, Logger: logger.With("component", "maintenance"),
	})
	if err != nil {
		return nil, fmt.Errorf("daemon: maintenance: %w", err)
	}
	return r, nil
}

// tenancyUsageInterval paces the per-tenant usage job: QUEEN_TENANCY_USAGE_INTERVAL
// while QUEEN_TENANCY_HEADER is set, else 0 (no job).
func tenancyUsageInterval(cfg *config.Config) time.Duration {
	if cfg.TenancyHeader == "" {
		return 0
	}
	return cfg.TenancyUsageInterval
}
