-- Activity and analytics tables (semantics.md §2.2, §15), with upstream's table names.
-- Dashboard data only: never read for delivery decisions. Every broker process adds
-- its per-minute counters additively (INSERT ... ON CONFLICT DO UPDATE SET x = x +
-- excluded.x), so the rows of one minute are the sum over the cluster and a partial
-- flush followed by a later one adds up to the same totals. Averages are stored as a
-- sum and a count next to the avg column that the same upsert keeps current.
-- Additive only.

-- queue_lag_metrics: per (minute, queue), summed over every broker process.
CREATE TABLE IF NOT EXISTS queen.queue_lag_metrics (
    bucket_time            timestamptz  NOT NULL,
    queue_name             varchar(255) NOT NULL,
    pop_count              bigint NOT NULL DEFAULT 0,   -- messages delivered (lag samples)
    lag_sum_ms             bigint NOT NULL DEFAULT 0,
    avg_lag_ms             double precision NOT NULL DEFAULT 0,
    max_lag_ms             bigint NOT NULL DEFAULT 0,
    push_request_count     bigint NOT NULL DEFAULT 0,
    push_message_count     bigint NOT NULL DEFAULT 0,
    pop_request_count      bigint NOT NULL DEFAULT 0,
    pop_empty_count        bigint NOT NULL DEFAULT 0,
    ack_request_count      bigint NOT NULL DEFAULT 0,
    ack_message_count      bigint NOT NULL DEFAULT 0,
    ack_success_count      bigint NOT NULL DEFAULT 0,
    ack_failed_count       bigint NOT NULL DEFAULT 0,
    auto_ack_count         bigint NOT NULL DEFAULT 0,
    transaction_count      bigint NOT NULL DEFAULT 0,
    dlq_count              bigint NOT NULL DEFAULT 0,
    parked_count           double precision NOT NULL DEFAULT 0, -- average parked long-polls over the minute
    partitions_created     bigint NOT NULL DEFAULT 0,
    partitions_deleted     bigint NOT NULL DEFAULT 0,
    partition_count        bigint NOT NULL DEFAULT 0,
    updated_at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bucket_time, queue_name)
);
CREATE INDEX IF NOT EXISTS idx_queue_lag_metrics_queue_bucket
    ON queen.queue_lag_metrics (queue_name, bucket_time);

-- worker_metrics: per (minute, hostname, worker_id, pid). worker_id is the broker's
-- instance name (QUEEN_INSTANCE, else the hostname).
CREATE TABLE IF NOT EXISTS queen.worker_metrics (
    bucket_time            timestamptz  NOT NULL,
    hostname               varchar(255) NOT NULL,
    worker_id              varchar(255) NOT NULL,
    pid                    integer      NOT NULL,
    sample_count           bigint NOT NULL DEFAULT 0,
    event_loop_lag_sum_ms  double precision NOT NULL DEFAULT 0, -- Go scheduling delay of the 1 Hz sampler
    avg_event_loop_lag_ms  double precision NOT NULL DEFAULT 0,
    max_event_loop_lag_ms  double precision NOT NULL DEFAULT 0,
    free_slots_sum         bigint NOT NULL DEFAULT 0,           -- idle + not yet opened pool connections
    avg_free_slots         double precision NOT NULL DEFAULT 0,
    min_free_slots         bigint,
    db_connections         bigint NOT NULL DEFAULT 0,           -- pool size (max connections)
    parked_sum             bigint NOT NULL DEFAULT 0,
    avg_parked             double precision NOT NULL DEFAULT 0,
    max_parked             bigint NOT NULL DEFAULT 0,
    jobs_done              bigint NOT NULL DEFAULT 0,
    push_request_count     bigint NOT NULL DEFAULT 0,
    pop_request_count      bigint NOT NULL DEFAULT 0,
    ack_request_count      bigint NOT NULL DEFAULT 0,
    transaction_count      bigint NOT NULL DEFAULT 0,
    push_message_count     bigint NOT NULL DEFAULT 0,
    pop_message_count      bigint NOT NULL DEFAULT 0,
    pop_empty_count        bigint NOT NULL DEFAULT 0,
    ack_message_count      bigint NOT NULL DEFAULT 0,
    ack_success_count      bigint NOT NULL DEFAULT 0,
    ack_failed_count       bigint NOT NULL DEFAULT 0,
    auto_ack_count         bigint NOT NULL DEFAULT 0,
    lag_count              bigint NOT NULL DEFAULT 0,
    lag_sum_ms             bigint NOT NULL DEFAULT 0,
    avg_lag_ms             double precision NOT NULL DEFAULT 0,
    max_lag_ms             bigint NOT NULL DEFAULT 0,
    db_error_count         bigint NOT NULL DEFAULT 0,
    dlq_count              bigint NOT NULL DEFAULT 0,
    updated_at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bucket_time, hostname, worker_id, pid)
);

-- queue_parked_replica: parked long-polls per (minute, queue, replica). parked_count is
-- the average over the minute: the sum of the 1 Hz samples divided by 60.
CREATE TABLE IF NOT EXISTS queen.queue_parked_replica (
    bucket_time  timestamptz  NOT NULL,
    queue_name   varchar(255) NOT NULL,
    hostname     varchar(255) NOT NULL,
    worker_id    varchar(255) NOT NULL,
    parked_count double precision NOT NULL DEFAULT 0,
    max_parked   bigint NOT NULL DEFAULT 0,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bucket_time, queue_name, hostname, worker_id)
);

-- system_metrics: per process per minute, a JSON aggregate of 1 Hz process samples:
-- {"<group>":{"<key>":{"avg":..,"min":..,"max":..,"last":..}}}. A row is rewritten
-- whole (not added to): the process holds the minute's aggregate until it closes.
CREATE TABLE IF NOT EXISTS queen.system_metrics (
    bucket_time  timestamptz  NOT NULL,
    hostname     varchar(255) NOT NULL,
    worker_id    varchar(255) NOT NULL,
    pid          integer      NOT NULL,
    sample_count bigint NOT NULL DEFAULT 0,
    metrics      jsonb  NOT NULL DEFAULT '{}',
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bucket_time, hostname, worker_id, pid)
);

-- retention_history: written by the retention and eviction jobs (semantics.md §2.2,
-- §11.2–11.3); nothing writes it until those jobs exist.
CREATE TABLE IF NOT EXISTS queen.retention_history (
    id               bigserial PRIMARY KEY,
    partition_id     uuid,
    messages_deleted integer NOT NULL DEFAULT 0,
    retention_type   varchar(50) NOT NULL,
    executed_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS idx_retention_history_executed_at
    ON queen.retention_history (executed_at);
