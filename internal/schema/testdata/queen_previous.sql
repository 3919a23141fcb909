-- The tables of a database an earlier queen created, before upstream's layout was kept
-- for the names both brokers use: its 000, 001 and 080 schema files and the streams
-- tables, with a schema version recorded. The functions come from the next apply.

-- queen schema and version bookkeeping.
CREATE SCHEMA IF NOT EXISTS queen;

CREATE TABLE IF NOT EXISTS queen.schema_version (
    version    text PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- Core tables, with the upstream Queen 0.15 names and columns so a
-- database written by an upstream broker can be served in place. Additive only.

CREATE TABLE IF NOT EXISTS queen.queues (
    id                          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name                        varchar(255) NOT NULL UNIQUE,
    namespace                   varchar(255),
    task                        varchar(255),
    priority                    integer DEFAULT 0,
    lease_time                  integer DEFAULT 300,
    retry_limit                 integer DEFAULT 3,
    retry_delay                 integer DEFAULT 1000,
    ttl                         integer DEFAULT 3600,
    dead_letter_queue           boolean DEFAULT false,
    dlq_after_max_retries       boolean DEFAULT false,
    delayed_processing          integer DEFAULT 0,
    window_buffer               integer DEFAULT 0,
    retention_seconds           integer DEFAULT 0,
    completed_retention_seconds integer DEFAULT 0,
    retention_enabled           boolean DEFAULT false,
    encryption_enabled          boolean DEFAULT false,
    max_wait_time_seconds       integer DEFAULT 0,
    max_queue_size              integer DEFAULT 0,
    created_at                  timestamptz DEFAULT now(),
    updated_at                  timestamptz DEFAULT now()
);

CREATE TABLE IF NOT EXISTS queen.partitions (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    queue_id      uuid NOT NULL REFERENCES queen.queues(id) ON DELETE CASCADE,
    name          varchar(255) NOT NULL DEFAULT 'Default',
    created_at    timestamptz DEFAULT now(),
    last_activity timestamptz DEFAULT now(),
    UNIQUE (queue_id, name)
);

CREATE TABLE IF NOT EXISTS queen.messages (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    transaction_id varchar(255) NOT NULL,
    partition_id   uuid NOT NULL REFERENCES queen.partitions(id) ON DELETE CASCADE,
    payload        jsonb NOT NULL,
    trace_id       uuid DEFAULT gen_random_uuid(),
    created_at     timestamptz NOT NULL DEFAULT now(),
    is_encrypted   boolean DEFAULT false,
    producer_sub   text
);
-- Dedup and ack lookups compare transaction ids byte for byte (COLLATE "C"): with the
-- database's collation every comparison in the index descent is a strcoll() call, and
-- the lookups cost three times as much (measured on C.UTF-8). Equality is the same
-- under both, so uniqueness is unchanged. Lookups must say COLLATE "C" to use it. It
-- replaces upstream's idx_messages_partition_transaction on the plain column.
CREATE UNIQUE INDEX IF NOT EXISTS idx_messages_partition_transaction_c
    ON queen.messages (partition_id, transaction_id COLLATE "C");
DROP INDEX IF EXISTS queen.idx_messages_partition_transaction;
CREATE INDEX IF NOT EXISTS idx_messages_partition_created_id
    ON queen.messages (partition_id, created_at, id);

CREATE TABLE IF NOT EXISTS queen.partition_consumers (
    id                       uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    partition_id             uuid NOT NULL REFERENCES queen.partitions(id) ON DELETE CASCADE,
    consumer_group           varchar(255) NOT NULL DEFAULT '__QUEUE_MODE__',
    last_consumed_id         uuid DEFAULT '00000000-0000-0000-0000-000000000000',
    last_consumed_created_at timestamptz,
    lease_acquired_at        timestamptz,
    lease_expires_at         timestamptz,
    worker_id                varchar(255),
    batch_size               integer DEFAULT 0,
    acked_count              integer DEFAULT 0,
    batch_retry_count        integer DEFAULT 0,
    total_messages_consumed  bigint DEFAULT 0,
    total_batches_consumed   bigint DEFAULT 0,
    last_consumed_at         timestamptz,
    message_batch            jsonb,
    pending_estimate         bigint DEFAULT 0,
    last_stats_update        timestamptz,
    created_at               timestamptz DEFAULT now(),
    UNIQUE (partition_id, consumer_group),
    CONSTRAINT partition_consumers_cursor_consistency CHECK (
        (last_consumed_id = '00000000-0000-0000-0000-000000000000') = (last_consumed_created_at IS NULL)
    )
) WITH (fillfactor = 50,
        autovacuum_vacuum_scale_factor = 0.01,
        autovacuum_vacuum_threshold = 50,
        autovacuum_vacuum_cost_delay = 0);
CREATE INDEX IF NOT EXISTS idx_partition_consumers_worker_id
    ON queen.partition_consumers (worker_id) WHERE worker_id IS NOT NULL;

CREATE TABLE IF NOT EXISTS queen.partition_lookup (
    id                      bigserial PRIMARY KEY,
    queue_name              varchar(255) NOT NULL REFERENCES queen.queues(name) ON DELETE CASCADE,
    partition_id            uuid NOT NULL REFERENCES queen.partitions(id) ON DELETE CASCADE,
    last_message_id         uuid NOT NULL,
    last_message_created_at timestamptz NOT NULL,
    updated_at              timestamptz NOT NULL DEFAULT now(),
    UNIQUE (queue_name, partition_id)
) WITH (fillfactor = 50,
        autovacuum_vacuum_scale_factor = 0.01,
        autovacuum_vacuum_threshold = 50,
        autovacuum_vacuum_cost_delay = 0);
CREATE INDEX IF NOT EXISTS idx_partition_lookup_partition_id
    ON queen.partition_lookup (partition_id);

CREATE TABLE IF NOT EXISTS queen.consumer_groups_metadata (
    id                     bigserial PRIMARY KEY,
    consumer_group         varchar(255) NOT NULL,
    queue_name             varchar(255) NOT NULL DEFAULT '',
    partition_name         varchar(255) NOT NULL DEFAULT '',
    namespace              varchar(255) NOT NULL DEFAULT '',
    task                   varchar(255) NOT NULL DEFAULT '',
    subscription_mode      varchar(32),
    subscription_timestamp timestamptz,
    created_at             timestamptz DEFAULT now(),
    UNIQUE (consumer_group, queue_name, partition_name, namespace, task)
);
CREATE INDEX IF NOT EXISTS idx_consumer_groups_metadata_lookup
    ON queen.consumer_groups_metadata (consumer_group, queue_name, namespace, task);

CREATE TABLE IF NOT EXISTS queen.consumer_watermarks (
    queue_name         varchar(255) NOT NULL,
    consumer_group     varchar(255) NOT NULL,
    last_empty_scan_at timestamptz NOT NULL DEFAULT 'epoch',
    updated_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue_name, consumer_group)
);

CREATE TABLE IF NOT EXISTS queen.dead_letter_queue (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    message_id          uuid NOT NULL REFERENCES queen.messages(id) ON DELETE CASCADE,
    partition_id        uuid NOT NULL REFERENCES queen.partitions(id) ON DELETE CASCADE,
    consumer_group      varchar(255),
    error_message       text,
    retry_count         integer DEFAULT 0,
    original_created_at timestamptz,
    failed_at           timestamptz DEFAULT now()
);
CREATE INDEX IF NOT EXISTS idx_dlq_partition ON queen.dead_letter_queue (partition_id);
CREATE INDEX IF NOT EXISTS idx_dlq_consumer_group ON queen.dead_letter_queue (consumer_group);
CREATE INDEX IF NOT EXISTS idx_dlq_failed_at ON queen.dead_letter_queue (failed_at DESC);
CREATE INDEX IF NOT EXISTS idx_dlq_message_group ON queen.dead_letter_queue (message_id, consumer_group);

CREATE TABLE IF NOT EXISTS queen.system_state (
    key        varchar(255) PRIMARY KEY,
    value      jsonb NOT NULL,
    updated_at timestamptz DEFAULT now()
);

CREATE TABLE IF NOT EXISTS queen.message_traces (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    message_id     uuid REFERENCES queen.messages(id) ON DELETE CASCADE,
    partition_id   uuid REFERENCES queen.partitions(id) ON DELETE CASCADE,
    transaction_id varchar(255),
    consumer_group varchar(255),
    event_type     varchar(100) DEFAULT 'info',
    data           jsonb,
    created_at     timestamptz DEFAULT now(),
    worker_id      varchar(255)
);
CREATE INDEX IF NOT EXISTS idx_message_traces_message ON queen.message_traces (partition_id, transaction_id);

CREATE TABLE IF NOT EXISTS queen.message_trace_names (
    id         bigserial PRIMARY KEY,
    trace_id   uuid NOT NULL REFERENCES queen.message_traces(id) ON DELETE CASCADE,
    trace_name text NOT NULL,
    created_at timestamptz DEFAULT now(),
    UNIQUE (trace_id, trace_name)
);
CREATE INDEX IF NOT EXISTS idx_message_trace_names_name ON queen.message_trace_names (trace_name);

CREATE SCHEMA IF NOT EXISTS queen_streams;

CREATE TABLE IF NOT EXISTS queen_streams.queries (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name         text NOT NULL UNIQUE,
    source_queue text NOT NULL,
    sink_queue   text,
    config_hash  text NOT NULL,
    created_at   timestamptz DEFAULT now(),
    updated_at   timestamptz DEFAULT now()
);

-- partition_id deliberately has no foreign key: a shard's state outlives the cleanup
-- of an idle partition (its open windows can still be flushed); it goes with a reset,
-- a query delete, or the delete of the partition's queue.
CREATE TABLE IF NOT EXISTS queen_streams.state (
    query_id     uuid NOT NULL REFERENCES queen_streams.queries(id) ON DELETE CASCADE,
    partition_id uuid NOT NULL,
    key          text NOT NULL,
    value        jsonb NOT NULL,
    updated_at   timestamptz DEFAULT now(),
    PRIMARY KEY (query_id, partition_id, key)
);
CREATE INDEX IF NOT EXISTS idx_streams_state_updated_at ON queen_streams.state (updated_at);

-- queen_streams.shards records, per (query, source partition), how many cycles
-- committed and when the last one did: what `queenctl streams` shows. One row per shard,
-- written under the shard's cycle lock, so cycles of different partitions never contend
-- on it (a per-query counter would serialise them all).
CREATE TABLE IF NOT EXISTS queen_streams.shards (
    query_id      uuid NOT NULL REFERENCES queen_streams.queries(id) ON DELETE CASCADE,
    partition_id  uuid NOT NULL,
    cycles        bigint NOT NULL DEFAULT 0,
    last_cycle_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (query_id, partition_id)
);

-- Activity and analytics tables, with upstream's table names.
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

-- retention_history: written by the retention and eviction jobs.
CREATE TABLE IF NOT EXISTS queen.retention_history (
    id               bigserial PRIMARY KEY,
    partition_id     uuid,
    messages_deleted integer NOT NULL DEFAULT 0,
    retention_type   varchar(50) NOT NULL,
    executed_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS idx_retention_history_executed_at
    ON queen.retention_history (executed_at);

INSERT INTO queen.schema_version (version) VALUES ('earlier');
