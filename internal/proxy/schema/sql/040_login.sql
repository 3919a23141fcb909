-- Login accounts and their sessions. Both keep the columns of the 0.15 auth proxy
-- (whose database a proxy adopts in place); tenant_id is new: NULL is an operator,
-- forwarded in global scope, else the tenant the user acts in. password_hash is
-- bcrypt.
CREATE TABLE IF NOT EXISTS queen_proxy.users (
    id            serial PRIMARY KEY,
    username      text NOT NULL UNIQUE,
    password_hash text NOT NULL,
    role          text NOT NULL DEFAULT 'read-only',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE queen_proxy.users ADD COLUMN IF NOT EXISTS tenant_id text REFERENCES queen_proxy.tenants (id);

-- One row per live session: id is the session token's jti. Logout deletes the row,
-- and a token whose row is gone is refused.
CREATE TABLE IF NOT EXISTS queen_proxy.sessions (
    id         text PRIMARY KEY,
    user_id    integer NOT NULL REFERENCES queen_proxy.users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_user ON queen_proxy.sessions (user_id);
CREATE INDEX IF NOT EXISTS sessions_expires ON queen_proxy.sessions (expires_at);
