package config

import (
	"time"

	"github.com/queenmq/queen/internal/envvalue"
)

// maxRetentionDays bounds the settings counted in days: a hundred years keeps
// anything, and a larger count would overflow the cut-off's duration into one in the
// future, which would delete everything.
const maxRetentionDays = 36500

// maintenanceSettings: the leader-gated background jobs. Every
// replica runs the loops; one wins each cycle through an advisory lock.
func maintenanceSettings() []setting {
	sec := func(p *time.Duration) value { return envvalue.Unit{P: p, Unit: time.Second, Min: 1} }
	count := func(p *int) value { return envvalue.Int[int]{P: p, Min: 1, Max: envvalue.NoMax} }
	days := func(p *int, lo int64) value { return envvalue.Int[int]{P: p, Min: lo, Max: maxRetentionDays} }
	return []setting{
		{
			name: "RETENTION_INTERVAL", def: "300000", group: groupMaintenance,
			doc: "Period of the retention cycle (message and completed-message retention, dead-letter " +
				"retention, empty-partition and stale consumer-state cleanup, metrics cleanup), in milliseconds.",
			bind: func(c *Config) value { return ms(&c.RetentionInterval, 1) },
		},
		{
			name: "RETENTION_BATCH_SIZE", def: "1000", group: groupMaintenance,
			doc:  "Rows per retention `DELETE`; the cycle goes on while batches come back full.",
			bind: func(c *Config) value { return count(&c.RetentionBatchSize) },
		},
		{
			name: "PARTITION_CLEANUP_DAYS", def: "30", group: groupMaintenance,
			doc:  "Partitions with no messages and no consumer activity for this many days are deleted.",
			bind: func(c *Config) value { return days(&c.PartitionCleanupDays, 1) },
		},
		{
			name: "METRICS_RETENTION_DAYS", def: "90", group: groupMaintenance,
			doc:  "Age in days after which the per-minute analytics rows (queue, worker, parked, system metrics, consumer-lag samples) and retention-history rows are deleted.",
			bind: func(c *Config) value { return days(&c.MetricsRetentionDays, 1) },
		},
		{
			name: "DLQ_RETENTION_DAYS", def: "0", group: groupMaintenance,
			doc: "queen only: dead-letter entries older than this many days are deleted, and until then " +
				"completed retention keeps the messages they refer to (so the DLQ stays readable). " +
				"0 keeps entries as long as their messages (upstream).",
			bind: func(c *Config) value { return days(&c.DLQRetentionDays, 0) },
		},
		{
			name: "EVICTION_INTERVAL", def: "60000", group: groupMaintenance,
			doc:  "Period of the eviction cycle for queues with `maxWaitTimeSeconds` and of the expired-lease reclaim, in milliseconds.",
			bind: func(c *Config) value { return ms(&c.EvictionInterval, 1) },
		},
		{
			name: "EVICTION_BATCH_SIZE", def: "1000", group: groupMaintenance,
			doc:  "Most messages evicted per eviction cycle.",
			bind: func(c *Config) value { return count(&c.EvictionBatchSize) },
		},
		{
			name: "PARTITION_LOOKUP_RECONCILE_INTERVAL_MS", def: "5000", group: groupMaintenance,
			doc:  "Period of the safety-net repair of the partition lookup table, in milliseconds.",
			bind: func(c *Config) value { return ms(&c.PartitionLookupReconcileInterval, 1) },
		},
		{
			name: "PARTITION_LOOKUP_RECONCILE_LOOKBACK_SECONDS", def: "60", group: groupMaintenance,
			doc:  "Lookup rows touched within this many seconds are checked against the messages.",
			bind: func(c *Config) value { return sec(&c.PartitionLookupReconcileLookback) },
		},
		{
			name: "QUEEN_ANALYZE_INTERVAL", def: "10s", group: groupMaintenance,
			doc: "How often one broker of the cluster looks for queen tables that have more than doubled " +
				"since PostgreSQL last gathered their statistics (at least 500 rows: partitions, their lookup, " +
				"cursor and ready rows, consumer registrations, queues, messages) and runs `ANALYZE` on them. " +
				"Statement plans cached while a table was small stay until it is analyzed again, and autovacuum " +
				"analyzes at most once per `autovacuum_naptime`: in between, a queue that grew to thousands of " +
				"partitions kept plans that scan tables it looks up by key (docs/postgresql.md). Each check is " +
				"one read of `pg_stat_user_tables`; a table doubles only so often, so `ANALYZE` runs rarely. " +
				"0 turns the job off (autovacuum alone keeps the statistics). Queen-only; a Go duration, 0 or at least 1s.",
			bind: func(c *Config) value { return envvalue.Limit{P: &c.AnalyzeInterval, Min: time.Second, Zero: "off"} },
		},
		{
			name: "QUEEN_ANALYTICS_FLUSH_INTERVAL", def: "1m0s", group: groupMaintenance,
			doc: "Meant for tests and demos. How often the broker writes its activity counters (the " +
				"per-minute rows behind `/api/v1/status`, `/api/v1/analytics/*` and the dashboard's charts). " +
				"The default, a minute, writes each minute once it has closed, so activity shows up to a " +
				"minute late. Shorter also writes the open minute's counts so far every interval and counts " +
				"the rest of that minute afresh; the rows add the parts up, so the totals are the same, at " +
				"the cost of one more write to the analytics tables per interval and broker. " +
				"`POST /api/v1/stats/refresh` writes the open minute once, on demand. Queen-only; a Go " +
				"duration from 1s to 1m.",
			bind: func(c *Config) value {
				return envvalue.Range{P: &c.AnalyticsFlushInterval, Min: time.Second, Max: time.Minute}
			},
		},
		{
			name: "QUEEN_ANALYTICS_BUCKET", def: "1m0s", group: groupMaintenance,
			doc: "Meant for tests and demos. Width of the analytics buckets: each broker counts its activity per " +
				"bucket and writes a bucket once it has closed, the consumer-lag sample runs once per bucket, and " +
				"the series of `/api/v1/status` and `/api/v1/analytics/*` over windows of up to an hour use buckets " +
				"of this width (longer windows keep 5, 15, 60 and 360 minutes). The default, a minute, is " +
				"upstream's resolution. Shorter buckets close within seconds, so a chart shows what just happened " +
				"without waiting for the minute to end, at the cost of more rows in the analytics tables (an hour " +
				"holds 3600 buckets of 1s) and bigger answers; the answers then report `bucketMinutes` 0 and the " +
				"exact width in `bucketSeconds`. Set the same value on every replica. Queen-only; whole seconds " +
				"that divide a minute: 1s, 2s, 3s, 4s, 5s, 6s, 10s, 12s, 15s, 20s, 30s or 1m.",
			bind: func(c *Config) value { return minuteDivisorValue{&c.AnalyticsBucket} },
		},
	}
}
