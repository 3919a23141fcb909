package store

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Advisory-lock keys of the maintenance jobs, in the two-key form. Keys are
// transaction-scoped (pg_try_advisory_xact_lock), so they cannot leak.
const (
	// LockNamespaceJobs is the first key of every job lock, in the two-key form; the
	// second is [JobLockID] of the job's name.
	LockNamespaceJobs int32 = 0x514A4F42 // "QJOB"
	// LockUpstreamRetention is upstream Queen's single-key lock for its retention and
	// eviction cycle. The retention, completed-retention and
	// eviction jobs take it too, so a cycle never overlaps one of an upstream broker
	// on the same database.
	LockUpstreamRetention int64 = 737001
)

// JobLockID is the second key of a job's lock: a hash of its name, so a new job
// needs no registry of numbers.
func JobLockID(name string) int32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int32(h.Sum32())
}

// JobClaim asks to run one cycle of a job.
type JobClaim struct {
	// Name identifies the job in maintenance_jobs and its lock.
	Name string
	// Interval is the job's period: a cycle is due when no replica started one in
	// the last DueFraction of it.
	Interval time.Duration
	// Hold bounds how long the claim may stay open (the job's timeout): the claiming
	// transaction is idle meanwhile, so its idle_in_transaction_session_timeout is
	// raised to this plus a margin.
	Hold time.Duration
	// UpstreamLock also takes [LockUpstreamRetention].
	UpstreamLock bool
	// Instance names the claiming replica in maintenance_jobs.
	Instance string
}

// DueFraction: a job is due when its last run on any replica started at least this
// fraction of its interval ago. Below 1, so one replica's jittered ticks never skip
// its own cycles; above ½, so two replicas never both run in one interval.
const DueFraction = 0.75

// Job claim outcomes when no lease is returned.
var (
	// ErrJobLocked means another replica (or an upstream broker) runs the job now.
	ErrJobLocked = errors.New("job lock held elsewhere")
	// ErrJobNotDue means a replica already ran this cycle.
	ErrJobNotDue = errors.New("job already ran this cycle")
)

// JobLease is a claimed cycle: an open transaction holding the job's advisory lock
// for as long as the job runs. The job's own statements run outside it, in short
// transactions of their own. Close it with Finish.
type JobLease struct {
	tx    pgx.Tx
	claim JobClaim
	s     *Store
}

// A claim (a job's cycle, the timer loop's) holds a pool connection while its
// statements take others. The store keeps at most one claim fewer open than the pool
// has connections, waiting for a slot: with as many claims as connections, each could
// hold one while waiting for another, and the pool would stall (every request
// included) until the claims' timeouts.

// claimSlot waits for a free claim slot; the caller gives it back with claimDone.
func (s *Store) claimSlot(ctx context.Context) error {
	select {
	case s.cycles <- struct{}{}:
		return nil
	case <-ctx.Done():
		return interpretError(ctx.Err())
	}
}

func (s *Store) claimDone() { <-s.cycles }

// JobClaimCycle takes the job's lock without waiting and checks that the cycle is
// due. It returns ErrJobLocked or ErrJobNotDue (and no lease) when this replica must
// skip the cycle. It waits while the store holds as many claims as it allows (see
// claimSlot).
func (s *Store) JobClaimCycle(ctx context.Context, c JobClaim) (*JobLease, error) {
	if err := s.claimSlot(ctx); err != nil {
		return nil, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		s.claimDone()
		return nil, interpretError(err)
	}
	release := func(err error) (*JobLease, error) {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		s.claimDone()
		return nil, err
	}
	hold := strconv.FormatInt((c.Hold + 30*time.Second).Milliseconds(), 10)
	var got, due bool
	err = tx.QueryRow(ctx, `
SELECT set_config('idle_in_transaction_session_timeout', $4, true) IS NOT NULL
   AND pg_try_advisory_xact_lock($1, $2)
   AND (NOT $3 OR pg_try_advisory_xact_lock($5::bigint))`,
		LockNamespaceJobs, JobLockID(c.Name), c.UpstreamLock, hold, LockUpstreamRetention).Scan(&got)
	if err != nil {
		return release(interpretError(err))
	}
	if !got {
		return release(ErrJobLocked)
	}
	err = tx.QueryRow(ctx, `
SELECT NOT EXISTS (SELECT 1 FROM queen.maintenance_jobs
                   WHERE name = $1 AND last_run_at > now() - make_interval(secs => $2))`,
		c.Name, c.Interval.Seconds()*DueFraction).Scan(&due)
	if err != nil {
		return release(interpretError(err))
	}
	if !due {
		return release(ErrJobNotDue)
	}
	return &JobLease{tx: tx, claim: c, s: s}, nil
}

// Finish records the run (rows affected, duration, error text) and commits, which
// releases the lock. ctx should outlive the job's own deadline.
func (l *JobLease) Finish(ctx context.Context, rows int64, took time.Duration, runErr error) error {
	var errText *string
	if runErr != nil {
		s := runErr.Error()
		errText = &s
	}
	defer func() {
		_ = l.tx.Rollback(context.WithoutCancel(ctx))
		l.s.claimDone()
	}()
	_, err := l.tx.Exec(ctx, `
INSERT INTO queen.maintenance_jobs AS j (name, last_run_at, last_finished_at, last_duration_ms, last_rows,
                                         last_error, last_instance, runs)
VALUES ($1, now(), clock_timestamp(), $2, $3, $4, $5, 1)
ON CONFLICT (name) DO UPDATE SET
    last_run_at = excluded.last_run_at, last_finished_at = excluded.last_finished_at,
    last_duration_ms = excluded.last_duration_ms, last_rows = excluded.last_rows,
    last_error = excluded.last_error, last_instance = excluded.last_instance, runs = j.runs + 1`,
		l.claim.Name, took.Milliseconds(), rows, errText, l.claim.Instance)
	if err != nil {
		return fmt.Errorf("store: record job run: %w", interpretError(err))
	}
	return interpretError(l.tx.Commit(ctx))
}
