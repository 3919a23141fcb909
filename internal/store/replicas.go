package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// MaxReplicas bounds the rows ReplicaList returns; rows of replicas gone for long are
// deleted by a maintenance job, so a cluster holds far fewer.
const MaxReplicas = 1000

// Replica is one row of queen.replicas: what a broker replica last said about itself
// in its heartbeat.
type Replica struct {
	// Instance names the replica (QUEEN_INSTANCE, else the hostname): the row's key.
	Instance string
	// ProcessID is random per process, so a row rewritten by another process of the
	// same name is noticed.
	ProcessID string
	Hostname  string
	PID       int
	Version   string
	StartedAt time.Time
	// LastSeenAt is when the row was last written, by the database's clock (set by
	// ReplicaBeat, read by ReplicaList).
	LastSeenAt time.Time
	// StaleAfter is how long after LastSeenAt the writer expects its next beat at the
	// latest; Stale (read only) reports that the database's clock is past it.
	StaleAfter time.Duration
	Stale      bool
	Ready      bool
	Draining   bool
	// ParkedLongPolls counts the long-poll pops parked on the replica.
	ParkedLongPolls int
	// PoolInUse and PoolMax are the replica's database connections in use and its
	// pool size.
	PoolInUse int
	PoolMax   int
	// SpoolPending counts the pushes in the replica's disk spool, the oldest of them
	// SpoolOldestPendingAge old; SpoolHealthy is false after a failed spool write or
	// without a spool.
	SpoolPending          int64
	SpoolOldestPendingAge time.Duration
	SpoolHealthy          bool
	// Jobs is the replica's own view of its maintenance cycles.
	Jobs []ReplicaJob
	// SocketActivated reports a listener passed by systemd; WatchdogInterval is the
	// unit's WatchdogSec (0 = off).
	SocketActivated  bool
	WatchdogInterval time.Duration
}

// ReplicaJob is one replica's view of one maintenance job. It is stored as JSON in the
// replica's row.
type ReplicaJob struct {
	Name string `json:"name"`
	// LastResult is the outcome of the job's last run on the replica (success or
	// error; "" before the first); LastCycle that of its last cycle there, which may
	// have been skipped (skipped_locked, skipped_not_due) because another replica ran
	// it.
	LastResult string `json:"last_result"`
	LastCycle  string `json:"last_cycle"`
	// LastRunAt and LastSuccessAt are when the last run and the last successful run
	// on the replica started; LastError is the last run's error.
	LastRunAt     *time.Time `json:"last_run_at,omitempty"`
	LastSuccessAt *time.Time `json:"last_success_at,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
}

// sqlReplicaBeat upserts a replica's row, stamping last_seen_at with the database's
// clock, and returns the process id the row had before ("" for a new row).
const sqlReplicaBeat = `
WITH prev AS (SELECT r.process_id FROM queen.replicas r WHERE r.instance = $1)
INSERT INTO queen.replicas AS t (instance, process_id, hostname, pid, version, started_at, last_seen_at,
    stale_after_ms, ready, draining, parked_long_polls, pool_in_use, pool_max, spool_pending,
    spool_oldest_pending_secs, spool_healthy, jobs, socket_activated, watchdog_sec)
VALUES ($1, $2, $3, $4, $5, $6, now(), $7, $8, $9, $10, $11, $12, $13, $14, $15, $16::jsonb, $17, $18)
ON CONFLICT (instance) DO UPDATE SET
    process_id = excluded.process_id, hostname = excluded.hostname, pid = excluded.pid,
    version = excluded.version, started_at = excluded.started_at, last_seen_at = excluded.last_seen_at,
    stale_after_ms = excluded.stale_after_ms, ready = excluded.ready, draining = excluded.draining,
    parked_long_polls = excluded.parked_long_polls, pool_in_use = excluded.pool_in_use,
    pool_max = excluded.pool_max, spool_pending = excluded.spool_pending,
    spool_oldest_pending_secs = excluded.spool_oldest_pending_secs, spool_healthy = excluded.spool_healthy,
    jobs = excluded.jobs, socket_activated = excluded.socket_activated, watchdog_sec = excluded.watchdog_sec
RETURNING coalesce((SELECT p.process_id FROM prev p), '')`

// ReplicaBeat writes r as its replica's row (LastSeenAt and Stale are ignored) and
// returns the process id the row had before: "" for a new row, r.ProcessID when this
// process wrote it last, anything else when another process of the same instance name
// did.
func (s *Store) ReplicaBeat(ctx context.Context, r Replica) (previous string, err error) {
	jobs := r.Jobs
	if jobs == nil {
		jobs = []ReplicaJob{}
	}
	doc, err := json.Marshal(jobs)
	if err != nil {
		return "", fmt.Errorf("store: replica jobs: %w", err)
	}
	err = s.pool.QueryRow(ctx, sqlReplicaBeat, r.Instance, r.ProcessID, r.Hostname, r.PID, r.Version, r.StartedAt,
		r.StaleAfter.Milliseconds(), r.Ready, r.Draining, r.ParkedLongPolls, r.PoolInUse, r.PoolMax, r.SpoolPending,
		r.SpoolOldestPendingAge.Seconds(), r.SpoolHealthy, string(doc), r.SocketActivated,
		r.WatchdogInterval.Seconds()).Scan(&previous)
	if err != nil {
		return "", fmt.Errorf("store: replica heartbeat: %w", interpretError(err))
	}
	return previous, nil
}

// sqlReplicaList reads the replica rows by instance name; stale compares the
// database's clock with each row's own bound.
const sqlReplicaList = `
SELECT instance, process_id, hostname, pid, version, started_at, last_seen_at, stale_after_ms,
       now() > last_seen_at + make_interval(secs => stale_after_ms / 1000.0),
       ready, draining, parked_long_polls, pool_in_use, pool_max, spool_pending, spool_oldest_pending_secs,
       spool_healthy, jobs, socket_activated, watchdog_sec
FROM queen.replicas
ORDER BY instance
LIMIT $1`

// ReplicaList returns the replica rows ordered by instance name, at most MaxReplicas.
func (s *Store) ReplicaList(ctx context.Context) ([]Replica, error) {
	rows, err := s.pool.Query(ctx, sqlReplicaList, MaxReplicas)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Replica, error) {
		var r Replica
		var staleMs int64
		var spoolAge, watchdog float64
		var jobs []byte
		err := row.Scan(&r.Instance, &r.ProcessID, &r.Hostname, &r.PID, &r.Version, &r.StartedAt, &r.LastSeenAt,
			&staleMs, &r.Stale, &r.Ready, &r.Draining, &r.ParkedLongPolls, &r.PoolInUse, &r.PoolMax, &r.SpoolPending,
			&spoolAge, &r.SpoolHealthy, &jobs, &r.SocketActivated, &watchdog)
		if err != nil {
			return r, err
		}
		r.StartedAt, r.LastSeenAt = r.StartedAt.UTC(), r.LastSeenAt.UTC()
		r.StaleAfter = time.Duration(staleMs) * time.Millisecond
		r.SpoolOldestPendingAge = secondsDuration(spoolAge)
		r.WatchdogInterval = secondsDuration(watchdog)
		if err := json.Unmarshal(jobs, &r.Jobs); err != nil {
			return r, fmt.Errorf("store: jobs of replica %q: %w", r.Instance, err)
		}
		return r, nil
	})
	return out, interpretError(err)
}

// ReplicaCleanupBatch deletes up to limit replica rows last written before before.
func (s *Store) ReplicaCleanupBatch(ctx context.Context, before time.Time, limit int) (int64, error) {
	return s.countRow(ctx, "replica cleanup", `
WITH v AS (SELECT r.instance FROM queen.replicas r WHERE r.last_seen_at < $1 ORDER BY r.last_seen_at LIMIT $2),
del AS (DELETE FROM queen.replicas r USING v WHERE r.instance = v.instance RETURNING 1)
SELECT count(*) FROM del`, before, limit)
}
