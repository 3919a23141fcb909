-- Cells: each is one queen deployment (1-3 brokers on one PostgreSQL). The cell
-- 'default' is the proxy's QUEEN_PROXY_UPSTREAMS, upserted at every start; a tenant
-- whose cell is NULL lives there.
CREATE TABLE IF NOT EXISTS queen_proxy.cells (
    name                          text PRIMARY KEY,
    upstreams                     text[] NOT NULL,
    capacity_bytes                bigint NOT NULL DEFAULT 0,
    capacity_messages_per_second  double precision NOT NULL DEFAULT 0,
    closed                        boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE queen_proxy.tenants ADD COLUMN IF NOT EXISTS cell text;

-- A tenant's moves between cells; at most one is live (finished_at NULL) per tenant.
-- The replica running one holds it by a lease (owner, owner_until) that it renews;
-- another replica takes the move over once the lease has run out. A cancel asked
-- before the switch sets cancel_requested: the owner then undoes what it did and
-- ends the move as failed.
CREATE TABLE IF NOT EXISTS queen_proxy.tenant_moves (
    id          bigserial PRIMARY KEY,
    tenant_id   text NOT NULL REFERENCES queen_proxy.tenants (id),
    from_cell   text NOT NULL,
    to_cell     text NOT NULL,
    phase       text NOT NULL,
    progress    jsonb NOT NULL DEFAULT '{}',
    error       text,
    owner       text,
    owner_until timestamptz,
    pause_epoch integer NOT NULL DEFAULT 0,
    paused_at   timestamptz,
    pause_ms    double precision,
    cancel_requested boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
CREATE UNIQUE INDEX IF NOT EXISTS tenant_moves_live ON queen_proxy.tenant_moves (tenant_id) WHERE finished_at IS NULL;
CREATE INDEX IF NOT EXISTS tenant_moves_tenant ON queen_proxy.tenant_moves (tenant_id, id);
