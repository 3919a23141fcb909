-- Tenants are never deleted: a deleted tenant stays as a tombstone (status
-- 'deleted') so that its id is never reused.
CREATE TABLE IF NOT EXISTS queen_proxy.tenants (
    id         text PRIMARY KEY,
    name       text NOT NULL,
    status     text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended', 'deleted')),
    limits     jsonb NOT NULL,
    quotas     jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- API keys: only the SHA-256 of the whole key text is stored, never the secret.
CREATE TABLE IF NOT EXISTS queen_proxy.api_keys (
    id           text PRIMARY KEY,
    tenant_id    text NOT NULL REFERENCES queen_proxy.tenants (id),
    name         text NOT NULL DEFAULT '',
    scope        text NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
    queues       text[] NOT NULL DEFAULT ARRAY['*'],
    key_hash     bytea NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    revoked_at   timestamptz,
    last_used_at timestamptz,
    rotated_from text
);
CREATE INDEX IF NOT EXISTS api_keys_tenant ON queen_proxy.api_keys (tenant_id);

CREATE TABLE IF NOT EXISTS queen_proxy.audit_log (
    id     bigserial PRIMARY KEY,
    at     timestamptz NOT NULL DEFAULT now(),
    actor  text NOT NULL,
    action text NOT NULL,
    target text NOT NULL,
    detail jsonb NOT NULL DEFAULT '{}'
);
