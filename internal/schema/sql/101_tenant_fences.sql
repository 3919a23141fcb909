-- queen.tenant_fences: the tenants being moved to another cell (queen-proxy's move,
-- docs/api.md "Tenant export, import and fences"). While a tenant has a row, every
-- broker on this database answers that tenant's requests 503 tenant_moving before
-- touching anything else; brokers load the table at boot and re-read it every second.
-- POST /internal/api/tenancy/fence adds and removes rows. queen's own table: an
-- upstream broker never reads it. Additive only.
CREATE TABLE IF NOT EXISTS queen.tenant_fences (
    tenant text PRIMARY KEY,
    since  timestamptz NOT NULL DEFAULT now()
);
