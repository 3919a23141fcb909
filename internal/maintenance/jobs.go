package maintenance

import (
	"context"
	"fmt"
	"time"

	"github.com/queenmq/queen/internal/store"
)

// Settings are the jobs' knobs (see the maintenance settings in docs/configuration.md),
// taken from config.Config by the daemon.
type Settings struct {
	// RetentionInterval paces retention, completed retention, DLQ retention and the
	// cleanups (RETENTION_INTERVAL); EvictionInterval paces eviction and lease
	// reclaim (EVICTION_INTERVAL).
	RetentionInterval time.Duration
	EvictionInterval  time.Duration
	// BatchSize is the rows per DELETE (RETENTION_BATCH_SIZE); EvictionBatchSize the
	// messages evicted per cycle in total (EVICTION_BATCH_SIZE).
	BatchSize         int
	EvictionBatchSize int
	// PartitionIdle: partitions without messages and idle this long are deleted
	// (PARTITION_CLEANUP_DAYS).
	PartitionIdle time.Duration
	// MetricsRetention: analytics rows and retention history older than this go
	// (METRICS_RETENTION_DAYS).
	MetricsRetention time.Duration
	// DLQRetention: dead-letter entries older than this go, and completed retention
	// keeps dead-lettered messages until then (DLQ_RETENTION_DAYS); 0 turns both off.
	DLQRetention time.Duration
	// LeaseReclaimGrace: leases expired for longer than this are cleared (default 1 min).
	LeaseReclaimGrace time.Duration
	// MaxBatches caps the statements of one pass (default 100); the next cycle goes on.
	MaxBatches int
	// LookupReconcileInterval paces the partition lookup repair
	// (PARTITION_LOOKUP_RECONCILE_INTERVAL_MS; 0 turns it off) and LookupReconcileLookback
	// is how far back it re-checks recently written rows
	// (PARTITION_LOOKUP_RECONCILE_LOOKBACK_SECONDS).
	LookupReconcileInterval time.Duration
	LookupReconcileLookback time.Duration
	// ConsumerLagInterval paces the consumer-lag sample and is the width of its
	// buckets, so it must divide a minute (QUEEN_ANALYTICS_BUCKET; default
	// ConsumerLagInterval); ConsumerLagPairs caps the (group, queue) pairs one sample
	// covers (default ConsumerLagMaxPairs).
	ConsumerLagInterval time.Duration
	ConsumerLagPairs    int
	// ReplicaRetention: replica rows not written for this long are deleted (default
	// ReplicaRetention).
	ReplicaRetention time.Duration
	// TenancyUsageInterval paces the per-tenant usage refresh
	// (QUEEN_TENANCY_USAGE_INTERVAL); 0 leaves the job out, as when tenancy is off.
	TenancyUsageInterval time.Duration
	// AnalyzeInterval paces the check for hot tables that outgrew their statistics
	// (QUEEN_ANALYZE_INTERVAL); 0 leaves the job out.
	AnalyzeInterval time.Duration
	// NowFunc is the clock passed to the queries (tests move it forward); nil: time.Now.
	NowFunc func() time.Time
}

// Job names (the job label of the metrics, the name in queen.maintenance_jobs).
const (
	JobRetention          = "retention"
	JobCompletedRetention = "completed_retention"
	JobEviction           = "eviction"
	JobDLQRetention       = "dlq_retention"
	JobPartitionCleanup   = "partition_cleanup"
	JobConsumerCleanup    = "consumer_cleanup"
	JobLeaseReclaim       = "lease_reclaim"
	JobMetricsCleanup     = "metrics_cleanup"
	JobConsumerLag        = "consumer_lag_sample"
	JobReplicaCleanup     = "replica_cleanup"
	JobTenancyUsage       = "tenancy_usage"
	JobAnalyze            = "analyze"
)

// Defaults of the consumer-lag sample and the replica cleanup.
const (
	// ConsumerLagInterval is how often the lag of every consumer group is sampled by
	// default: the resolution of GET /api/v1/analytics/consumer-lag.
	ConsumerLagInterval = time.Minute
	// ConsumerLagMaxPairs caps the (consumer group, queue) pairs one sample covers,
	// the first ones by group and queue name: a sample counts the unconsumed messages
	// of their cursors, so its cost grows with the pairs and their backlog. A cycle
	// that leaves pairs out reports itself truncated.
	ConsumerLagMaxPairs = 1000
	// ReplicaRetention is how long the row of a replica that stopped writing its
	// heartbeat stays listed (stale or draining) before it is deleted.
	ReplicaRetention = time.Hour
)

// Defaults of the two knobs that are not settings: the batches one cycle of a job
// deletes at most, and how long past its lease a lease is reclaimed.
const (
	defaultMaxBatches        = 100
	defaultLeaseReclaimGrace = time.Minute
)

// partitionCleanupLimit is upstream's cap on partitions deleted per cycle.
const partitionCleanupLimit = 1000

// Jobs returns queen's maintenance jobs over st. dlq_retention is included only when
// s.DLQRetention is set, partition_lookup_reconcile only when
// s.LookupReconcileInterval is, tenancy_usage only when s.TenancyUsageInterval is,
// analyze only when s.AnalyzeInterval is.
func Jobs(st *store.Store, s Settings) []Job {
	// The batch sizes are settings (RETENTION_BATCH_SIZE, EVICTION_BATCH_SIZE): their
	// defaults live in the settings table, so a zero here is a caller's mistake.
	if s.BatchSize <= 0 || s.EvictionBatchSize <= 0 {
		panic(fmt.Sprintf("maintenance: Settings.BatchSize (%d) and Settings.EvictionBatchSize (%d) must be positive",
			s.BatchSize, s.EvictionBatchSize))
	}
	if s.MaxBatches <= 0 {
		s.MaxBatches = defaultMaxBatches
	}
	if s.LeaseReclaimGrace <= 0 {
		s.LeaseReclaimGrace = defaultLeaseReclaimGrace
	}
	if s.NowFunc == nil {
		s.NowFunc = time.Now
	}
	if s.ConsumerLagInterval <= 0 {
		s.ConsumerLagInterval = ConsumerLagInterval
	}
	if s.ConsumerLagPairs <= 0 {
		s.ConsumerLagPairs = ConsumerLagMaxPairs
	}
	if s.ReplicaRetention <= 0 {
		s.ReplicaRetention = ReplicaRetention
	}
	now := s.NowFunc
	batches := func(f func(ctx context.Context, limit int) (int64, error)) func(context.Context) (Result, error) {
		return func(ctx context.Context) (Result, error) { return inBatches(ctx, s.MaxBatches, s.BatchSize, f) }
	}
	jobs := []Job{
		&job{name: JobRetention, interval: s.RetentionInterval, upstream: true,
			run: batches(func(ctx context.Context, n int) (int64, error) {
				return st.RetentionDeleteBatch(ctx, now(), n)
			})},
		&job{name: JobCompletedRetention, interval: s.RetentionInterval, upstream: true,
			run: batches(func(ctx context.Context, n int) (int64, error) {
				return st.CompletedRetentionDeleteBatch(ctx, now(), n, s.DLQRetention)
			})},
		// Upstream semantics: one batch of at most EVICTION_BATCH_SIZE per cycle.
		&job{name: JobEviction, interval: s.EvictionInterval, upstream: true,
			run: func(ctx context.Context) (Result, error) {
				return inBatches(ctx, 1, s.EvictionBatchSize, func(ctx context.Context, n int) (int64, error) {
					return st.EvictionDeleteBatch(ctx, now(), n)
				})
			}},
		&job{name: JobPartitionCleanup, interval: s.RetentionInterval,
			run: func(ctx context.Context) (Result, error) {
				n, err := st.PartitionCleanupBatch(ctx, now().Add(-s.PartitionIdle), partitionCleanupLimit)
				return Result{Rows: n, Batches: 1, Truncated: n == partitionCleanupLimit}, err
			}},
		&job{name: JobConsumerCleanup, interval: s.RetentionInterval,
			run: batches(func(ctx context.Context, n int) (int64, error) {
				return st.ConsumerStateCleanupBatch(ctx, n)
			})},
		&job{name: JobLeaseReclaim, interval: s.EvictionInterval,
			run: batches(func(ctx context.Context, n int) (int64, error) {
				return st.LeaseReclaimBatch(ctx, now().Add(-s.LeaseReclaimGrace), n)
			})},
		&job{name: JobMetricsCleanup, interval: s.RetentionInterval,
			run: func(ctx context.Context) (Result, error) {
				var total Result
				for _, table := range store.MetricsTables() {
					res, err := inBatches(ctx, s.MaxBatches, s.BatchSize, func(ctx context.Context, n int) (int64, error) {
						return st.MetricsDeleteBatch(ctx, table, now().Add(-s.MetricsRetention), n)
					})
					total.Rows += res.Rows
					total.Batches += res.Batches
					total.Truncated = total.Truncated || res.Truncated
					if err != nil {
						return total, err
					}
				}
				return total, nil
			}},
		&job{name: JobConsumerLag, interval: s.ConsumerLagInterval,
			run: func(ctx context.Context) (Result, error) {
				n, truncated, err := st.ConsumerLagSample(ctx, now(), s.ConsumerLagInterval, s.ConsumerLagPairs)
				return Result{Rows: n, Batches: 1, Truncated: truncated}, err
			}},
		&job{name: JobReplicaCleanup, interval: s.RetentionInterval,
			run: batches(func(ctx context.Context, n int) (int64, error) {
				return st.ReplicaCleanupBatch(ctx, now().Add(-s.ReplicaRetention), n)
			})},
		kvSweep(st, s),
	}
	if s.LookupReconcileInterval > 0 {
		jobs = append(jobs, &lookupReconcile{st: st, interval: s.LookupReconcileInterval,
			lookback: s.LookupReconcileLookback, batch: s.BatchSize, batches: s.MaxBatches, now: now})
	}
	if s.TenancyUsageInterval > 0 {
		jobs = append(jobs, &job{name: JobTenancyUsage, interval: s.TenancyUsageInterval,
			run: func(ctx context.Context) (Result, error) {
				n, err := st.TenantUsageRefresh(ctx, now())
				return Result{Rows: n, Batches: 1}, err
			}})
	}
	if s.AnalyzeInterval > 0 {
		jobs = append(jobs, &job{name: JobAnalyze, interval: s.AnalyzeInterval,
			run: func(ctx context.Context) (Result, error) {
				tables, err := st.AnalyzeGrownTables(ctx)
				return Result{Rows: int64(len(tables)), Batches: 1}, err
			}})
	}
	if s.DLQRetention > 0 {
		jobs = append(jobs, &job{name: JobDLQRetention, interval: s.RetentionInterval,
			run: batches(func(ctx context.Context, n int) (int64, error) {
				return st.DLQDeleteBatch(ctx, now().Add(-s.DLQRetention), n)
			})})
	}
	return jobs
}

// job is a Job made of a function.
type job struct {
	name     string
	interval time.Duration
	upstream bool
	run      func(context.Context) (Result, error)
}

func (j *job) Name() string                                { return j.name }
func (j *job) Interval() time.Duration                     { return j.interval }
func (j *job) RunOnce(ctx context.Context) (Result, error) { return j.run(ctx) }
func (j *job) UpstreamLock() bool                          { return j.upstream }

// inBatches runs f with limit until a batch comes back short, at most max times.
func inBatches(ctx context.Context, max, limit int, f func(ctx context.Context, limit int) (int64, error)) (Result, error) {
	var res Result
	for res.Batches < max {
		n, err := f(ctx, limit)
		res.Batches++
		res.Rows += n
		if err != nil {
			return res, err
		}
		if n < int64(limit) {
			return res, nil
		}
	}
	res.Truncated = true
	return res, nil
}
