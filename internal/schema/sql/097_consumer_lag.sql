-- queen.consumer_lag_history: a per-minute sample of every consumer group's lag on
-- every queue it has cursors on, written by the consumer_lag_sample maintenance job
-- (one replica per cycle) and read by GET /api/v1/analytics/consumer-lag. A sample is
-- a gauge: a second sample in the same minute replaces the first. The metrics_cleanup
-- job deletes rows older than METRICS_RETENTION_DAYS. queen's own table. Additive only.
CREATE TABLE IF NOT EXISTS queen.consumer_lag_history (
    bucket_time          timestamptz NOT NULL,
    consumer_group       text NOT NULL,
    queue_name           text NOT NULL,
    total_lag            bigint NOT NULL DEFAULT 0,           -- unconsumed messages over the cursors
    max_time_lag_seconds double precision NOT NULL DEFAULT 0, -- age of the oldest unconsumed message
    partitions_with_lag  integer NOT NULL DEFAULT 0,
    partitions           integer NOT NULL DEFAULT 0,          -- the group's cursors on the queue
    sampled_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bucket_time, consumer_group, queue_name)
);
CREATE INDEX IF NOT EXISTS idx_consumer_lag_history_group
    ON queen.consumer_lag_history (consumer_group, bucket_time);
