// Package heartbeat keeps this replica's row in queen.replicas, which GET
// /api/v1/system/replicas lists for the whole cluster.
//
// Every [Interval] a replica upserts its row (keyed by its instance name): version,
// start time, readiness, parked long-polls, pool use, disk spool, its own view of the
// maintenance jobs and how systemd runs it. The row carries its own staleness bound
// (three intervals), and last_seen_at is the database's clock, so a reader flags a
// replica that stopped writing without trusting any broker's clock. When the stop
// begins the replica writes at once with draining set, and once more as its last act
// before the pool closes; a replica that crashes just goes stale. The maintenance job
// replica_cleanup deletes rows not written for an hour.
//
// Two processes with one instance name would overwrite each other's row; the upsert
// returns the previous writer's process id, so that is logged once.
//
// It imports broker, maintenance and store; the SQL stays in store.
package heartbeat
