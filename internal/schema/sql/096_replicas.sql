-- queen.replicas: one row per broker replica, keyed by its instance name (QUEEN_INSTANCE,
-- else the hostname), upserted by the replica's heartbeat every few seconds and read
-- by GET /api/v1/system/replicas. A replica that stops writes a last row with draining
-- set; one that crashed just stops writing. Rows not written for an hour are deleted by
-- the replica_cleanup job. Times are the database's clock, so replicas with skewed
-- clocks still compare. queen's own table: upstream brokers neither read nor write it.
-- Additive only.
CREATE TABLE IF NOT EXISTS queen.replicas (
    instance                  text PRIMARY KEY,
    process_id                text NOT NULL,        -- random per process: tells a namesake from a restart
    hostname                  text NOT NULL DEFAULT '',
    pid                       integer NOT NULL DEFAULT 0,
    version                   text NOT NULL DEFAULT '',
    started_at                timestamptz NOT NULL,
    last_seen_at              timestamptz NOT NULL DEFAULT now(),
    stale_after_ms            bigint NOT NULL DEFAULT 15000, -- the writer's own staleness bound
    ready                     boolean NOT NULL DEFAULT false,
    draining                  boolean NOT NULL DEFAULT false,
    parked_long_polls         integer NOT NULL DEFAULT 0,
    pool_in_use               integer NOT NULL DEFAULT 0,
    pool_max                  integer NOT NULL DEFAULT 0,
    spool_pending             bigint NOT NULL DEFAULT 0,
    spool_oldest_pending_secs double precision NOT NULL DEFAULT 0,
    spool_healthy             boolean NOT NULL DEFAULT true,
    jobs                      jsonb NOT NULL DEFAULT '[]', -- this replica's view of its maintenance cycles
    socket_activated          boolean NOT NULL DEFAULT false,
    watchdog_sec              double precision NOT NULL DEFAULT 0
);
