-- queen.tenant_usage: what each tenant stores, for GET /internal/api/tenancy/usage (the
-- proxy's quotas). A tenant's queues are those whose stored name starts with a tenant
-- (queen.tenant_of_q1) and ':'; queues are listed by their relative names,
-- messages count every stored message (consumed or not, until retention deletes it) and
-- bytes sum pg_column_size(payload). The tenancy_usage maintenance job (one replica per
-- cycle, every QUEEN_TENANCY_USAGE_INTERVAL while QUEEN_TENANCY_HEADER is set) replaces
-- the rows in one transaction and stamps queen.tenant_usage_state. queen's own tables:
-- an upstream broker never reads them. Additive only.
CREATE TABLE IF NOT EXISTS queen.tenant_usage (
    tenant      text PRIMARY KEY,
    queues      text[] NOT NULL DEFAULT '{}',
    partitions  bigint NOT NULL DEFAULT 0,
    messages    bigint NOT NULL DEFAULT 0,
    bytes       bigint NOT NULL DEFAULT 0,
    computed_at timestamptz NOT NULL
);

-- queen.tenant_usage_state holds one row: when the usage was last computed (a run that
-- finds no tenant still records its time).
CREATE TABLE IF NOT EXISTS queen.tenant_usage_state (
    id          boolean PRIMARY KEY DEFAULT true CHECK (id),
    computed_at timestamptz NOT NULL
);
