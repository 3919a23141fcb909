// Package maintenance runs queen's cluster-wide periodic jobs (docs/retention.md):
// retention, completed retention, eviction, dead-letter retention, empty-partition
// and stale consumer-state cleanup, lease reclaim, the cleanup of the analytics
// tables, the per-minute consumer-lag sample and the cleanup of the rows of replicas
// that stopped their heartbeat.
//
// Every replica runs every job's loop. A cycle runs on exactly one of them:
//
//	BEGIN
//	  pg_try_advisory_xact_lock(QJOB, hash(job))      -- busy: skip (skipped_locked)
//	  last_run_at of the job in queen.maintenance_jobs  -- within ¾ interval: skip (skipped_not_due)
//	  … RunOnce: bounded batches, each its own short statement …
//	  upsert maintenance_jobs (last_run_at = start, duration, rows, error)
//	COMMIT                                             -- releases the lock
//
// The claiming transaction stays open (idle) while the job runs, so the lock cannot
// outlive the replica; it holds no snapshot and no row locks. The "due" check makes a
// cycle run once per interval across the cluster however the replicas' timers line up,
// and a crashed run (no commit) leaves the cycle due for the others.
//
// [Runner.Cycles] counts the cycles this replica has completed, once each is
// recorded: tests wait on it (progress.Signal.WaitFor) rather than poll for a job's
// effects.
package maintenance
