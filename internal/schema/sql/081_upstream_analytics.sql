-- Upstream's analytics and bookkeeping tables, in upstream's layout, created when
-- missing so that an upstream broker can boot on a database queen created (its schema
-- file skips existing tables and then creates indexes on, and its procedures write,
-- exactly these columns) and find what its boot and procedures reference: the
-- ON CONFLICT targets as unique indexes, the index names, and worker_metrics_summary's
-- singleton row. queen does not write these tables (its own are in 080_activity.sql);
-- on a database adopted from upstream they keep upstream's history, and upstream's
-- triggers on partitions keep upserting queue_lag_metrics by (bucket_time, queue_name).
-- A table that exists is left as it is, indexes included.

DO $$
BEGIN
    IF to_regclass('queen.messages_consumed') IS NULL THEN
        CREATE TABLE queen.messages_consumed (
            id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            partition_id       uuid REFERENCES queen.partitions(id) ON DELETE CASCADE,
            consumer_group     varchar(255) NOT NULL,
            messages_completed integer DEFAULT 0,
            messages_failed    integer DEFAULT 0,
            acked_at           timestamptz DEFAULT now()
        );
        CREATE INDEX idx_messages_consumed_acked_at ON queen.messages_consumed (acked_at DESC);
        CREATE INDEX idx_messages_consumed_partition_acked ON queen.messages_consumed (partition_id, acked_at DESC);
        CREATE INDEX idx_messages_consumed_consumer_acked ON queen.messages_consumed (consumer_group, acked_at DESC);
        CREATE INDEX idx_messages_consumed_partition_id ON queen.messages_consumed (partition_id);
    END IF;
END
$$;

DO $$
BEGIN
    IF to_regclass('queen.system_metrics') IS NULL THEN
        CREATE TABLE queen.system_metrics (
            id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            "timestamp"  timestamptz NOT NULL,
            hostname     text NOT NULL,
            port         integer NOT NULL,
            worker_id    text NOT NULL,
            sample_count integer NOT NULL DEFAULT 60,
            metrics      jsonb NOT NULL,
            CONSTRAINT unique_metric_per_replica UNIQUE ("timestamp", hostname, port, worker_id)
        );
        CREATE INDEX idx_system_metrics_timestamp ON queen.system_metrics ("timestamp" DESC);
        CREATE INDEX idx_system_metrics_replica ON queen.system_metrics (hostname, port);
        CREATE INDEX idx_system_metrics_worker ON queen.system_metrics (worker_id);
        CREATE INDEX idx_system_metrics_metrics ON queen.system_metrics USING gin (metrics);
    END IF;
END
$$;

DO $$
BEGIN
    IF to_regclass('queen.queue_lag_metrics') IS NULL THEN
        CREATE TABLE queen.queue_lag_metrics (
            id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            bucket_time        timestamptz NOT NULL,
            queue_name         varchar(512) NOT NULL,
            pop_count          bigint DEFAULT 0,
            avg_lag_ms         bigint DEFAULT 0,
            max_lag_ms         bigint DEFAULT 0,
            created_at         timestamptz DEFAULT now(),
            push_request_count bigint DEFAULT 0,
            push_message_count bigint DEFAULT 0,
            pop_empty_count    bigint DEFAULT 0,
            ack_request_count  bigint DEFAULT 0,
            ack_success_count  bigint DEFAULT 0,
            ack_failed_count   bigint DEFAULT 0,
            transaction_count  bigint DEFAULT 0,
            partitions_created integer DEFAULT 0,
            partitions_deleted integer DEFAULT 0,
            partition_count    integer,
            parked_count       integer DEFAULT 0,
            UNIQUE (bucket_time, queue_name)
        );
        CREATE INDEX idx_queue_lag_bucket ON queen.queue_lag_metrics (bucket_time DESC);
        CREATE INDEX idx_queue_lag_queue ON queen.queue_lag_metrics (queue_name);
    END IF;
END
$$;

-- worker_metrics' worker_id is upstream's thread index (an integer). Upstream's boot
-- adds its own trigger that sums every insert into worker_metrics_summary.
DO $$
BEGIN
    IF to_regclass('queen.worker_metrics') IS NULL THEN
        CREATE TABLE queen.worker_metrics (
            id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            hostname              varchar(255) NOT NULL,
            worker_id             integer NOT NULL,
            pid                   integer NOT NULL,
            bucket_time           timestamptz NOT NULL,
            avg_event_loop_lag_ms integer DEFAULT 0,
            max_event_loop_lag_ms integer DEFAULT 0,
            avg_free_slots        integer DEFAULT 0,
            min_free_slots        integer DEFAULT 0,
            db_connections        integer DEFAULT 0,
            avg_job_queue_size    integer DEFAULT 0,
            max_job_queue_size    integer DEFAULT 0,
            backoff_size          integer DEFAULT 0,
            jobs_done             bigint DEFAULT 0,
            push_request_count    bigint DEFAULT 0,
            pop_request_count     bigint DEFAULT 0,
            ack_request_count     bigint DEFAULT 0,
            transaction_count     bigint DEFAULT 0,
            push_message_count    bigint DEFAULT 0,
            pop_message_count     bigint DEFAULT 0,
            ack_message_count     bigint DEFAULT 0,
            ack_success_count     bigint DEFAULT 0,
            ack_failed_count      bigint DEFAULT 0,
            lag_count             bigint DEFAULT 0,
            avg_lag_ms            bigint DEFAULT 0,
            max_lag_ms            bigint DEFAULT 0,
            db_error_count        bigint DEFAULT 0,
            dlq_count             bigint DEFAULT 0,
            created_at            timestamptz DEFAULT now(),
            UNIQUE (hostname, worker_id, pid, bucket_time)
        );
        CREATE INDEX idx_worker_metrics_bucket ON queen.worker_metrics (bucket_time DESC);
        CREATE INDEX idx_worker_metrics_worker ON queen.worker_metrics (hostname, worker_id);
        CREATE INDEX idx_worker_metrics_created ON queen.worker_metrics (created_at);
    END IF;
END
$$;

DO $$
BEGIN
    IF to_regclass('queen.worker_metrics_summary') IS NULL THEN
        CREATE TABLE queen.worker_metrics_summary (
            id                  integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
            total_push_requests bigint DEFAULT 0,
            total_pop_requests  bigint DEFAULT 0,
            total_ack_requests  bigint DEFAULT 0,
            total_transactions  bigint DEFAULT 0,
            total_push_messages bigint DEFAULT 0,
            total_pop_messages  bigint DEFAULT 0,
            total_ack_messages  bigint DEFAULT 0,
            total_ack_success   bigint DEFAULT 0,
            total_ack_failed    bigint DEFAULT 0,
            total_db_errors     bigint DEFAULT 0,
            total_dlq           bigint DEFAULT 0,
            last_updated_at     timestamptz DEFAULT now()
        );
        INSERT INTO queen.worker_metrics_summary (id) VALUES (1);
    END IF;
END
$$;

DO $$
BEGIN
    IF to_regclass('queen.queue_parked_replica') IS NULL THEN
        CREATE TABLE queen.queue_parked_replica (
            bucket_time  timestamptz NOT NULL,
            queue_name   varchar(512) NOT NULL,
            hostname     varchar(255) NOT NULL,
            worker_id    integer NOT NULL,
            parked_count integer DEFAULT 0,
            PRIMARY KEY (bucket_time, queue_name, hostname, worker_id)
        );
        CREATE INDEX idx_queue_parked_replica_bucket ON queen.queue_parked_replica (bucket_time DESC);
        CREATE INDEX idx_queue_parked_replica_queue ON queen.queue_parked_replica (queue_name);
    END IF;
END
$$;

DO $$
BEGIN
    IF to_regclass('queen.stats') IS NULL THEN
        CREATE TABLE queen.stats (
            stat_type               varchar(20) NOT NULL,
            stat_key                varchar(512) NOT NULL,
            queue_id                uuid REFERENCES queen.queues(id) ON DELETE CASCADE,
            partition_id            uuid REFERENCES queen.partitions(id) ON DELETE CASCADE,
            consumer_group          varchar(255) DEFAULT '__QUEUE_MODE__',
            child_count             integer NOT NULL DEFAULT 0,
            total_messages          bigint NOT NULL DEFAULT 0,
            pending_messages        bigint NOT NULL DEFAULT 0,
            processing_messages     bigint NOT NULL DEFAULT 0,
            completed_messages      bigint NOT NULL DEFAULT 0,
            dead_letter_messages    bigint NOT NULL DEFAULT 0,
            oldest_pending_at       timestamptz,
            newest_message_at       timestamptz,
            avg_lag_seconds         integer DEFAULT 0,
            max_lag_seconds         integer DEFAULT 0,
            median_lag_seconds      integer DEFAULT 0,
            avg_offset_lag          integer DEFAULT 0,
            max_offset_lag          integer DEFAULT 0,
            ingested_per_second     numeric(10,2) DEFAULT 0,
            processed_per_second    numeric(10,2) DEFAULT 0,
            prev_total_messages     bigint DEFAULT 0,
            prev_completed_messages bigint DEFAULT 0,
            prev_snapshot_at        timestamptz,
            last_scanned_at         timestamptz,
            last_scanned_message_id uuid,
            last_computed_at        timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (stat_type, stat_key)
        ) WITH (fillfactor = 50,
                autovacuum_vacuum_scale_factor = 0.01,
                autovacuum_vacuum_threshold = 50,
                autovacuum_vacuum_cost_delay = 0);
        CREATE INDEX idx_stats_type ON queen.stats (stat_type);
        CREATE INDEX idx_stats_queue_id ON queen.stats (queue_id) WHERE queue_id IS NOT NULL;
        CREATE INDEX idx_stats_partition_id ON queen.stats (partition_id) WHERE partition_id IS NOT NULL;
        CREATE INDEX idx_stats_computed ON queen.stats (last_computed_at);
    END IF;
END
$$;

DO $$
BEGIN
    IF to_regclass('queen.stats_history') IS NULL THEN
        CREATE TABLE queen.stats_history (
            stat_type            varchar(20) NOT NULL,
            stat_key             varchar(512) NOT NULL,
            bucket_time          timestamptz NOT NULL,
            total_messages       bigint DEFAULT 0,
            pending_messages     bigint DEFAULT 0,
            processing_messages  bigint DEFAULT 0,
            completed_messages   bigint DEFAULT 0,
            dead_letter_messages bigint DEFAULT 0,
            messages_ingested    integer DEFAULT 0,
            messages_processed   integer DEFAULT 0,
            max_lag_seconds      integer DEFAULT 0,
            PRIMARY KEY (stat_type, stat_key, bucket_time)
        );
        CREATE INDEX idx_stats_history_time ON queen.stats_history (bucket_time DESC);
        CREATE INDEX idx_stats_history_lookup ON queen.stats_history (stat_type, stat_key, bucket_time DESC);
    END IF;
END
$$;
