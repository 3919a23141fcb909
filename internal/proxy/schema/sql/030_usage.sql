-- Metering. Each replica upserts its whole count of a minute (replace semantics),
-- so a re-flush never double counts; reads sum the counters over replicas and take
-- the gauges' maxima.
CREATE TABLE IF NOT EXISTS queen_proxy.usage_minute (
    tenant_id       text NOT NULL,
    minute          timestamptz NOT NULL,
    replica_id      text NOT NULL,
    requests        bigint NOT NULL DEFAULT 0,
    push_requests   bigint NOT NULL DEFAULT 0,
    messages_in     bigint NOT NULL DEFAULT 0,
    duplicates_in   bigint NOT NULL DEFAULT 0,
    failed_in       bigint NOT NULL DEFAULT 0,
    bytes_in        bigint NOT NULL DEFAULT 0,
    bytes_out       bigint NOT NULL DEFAULT 0,
    pop_requests    bigint NOT NULL DEFAULT 0,
    empty_pops      bigint NOT NULL DEFAULT 0,
    messages_out    bigint NOT NULL DEFAULT 0,
    acks            bigint NOT NULL DEFAULT 0,
    rejected_rate   bigint NOT NULL DEFAULT 0,
    rejected_quota  bigint NOT NULL DEFAULT 0,
    upstream_errors bigint NOT NULL DEFAULT 0,
    stored_messages bigint NOT NULL DEFAULT 0,
    stored_bytes    bigint NOT NULL DEFAULT 0,
    queues          bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, minute, replica_id)
);
CREATE INDEX IF NOT EXISTS usage_minute_minute ON queen_proxy.usage_minute (minute);

-- Closed hours, recomputed from the minutes by one replica at a time.
CREATE TABLE IF NOT EXISTS queen_proxy.usage_hour (
    tenant_id       text NOT NULL,
    hour            timestamptz NOT NULL,
    requests        bigint NOT NULL DEFAULT 0,
    push_requests   bigint NOT NULL DEFAULT 0,
    messages_in     bigint NOT NULL DEFAULT 0,
    duplicates_in   bigint NOT NULL DEFAULT 0,
    failed_in       bigint NOT NULL DEFAULT 0,
    bytes_in        bigint NOT NULL DEFAULT 0,
    bytes_out       bigint NOT NULL DEFAULT 0,
    pop_requests    bigint NOT NULL DEFAULT 0,
    empty_pops      bigint NOT NULL DEFAULT 0,
    messages_out    bigint NOT NULL DEFAULT 0,
    acks            bigint NOT NULL DEFAULT 0,
    rejected_rate   bigint NOT NULL DEFAULT 0,
    rejected_quota  bigint NOT NULL DEFAULT 0,
    upstream_errors bigint NOT NULL DEFAULT 0,
    stored_messages bigint NOT NULL DEFAULT 0,
    stored_bytes    bigint NOT NULL DEFAULT 0,
    queues          bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, hour)
);
