-- Live proxy replicas: each heartbeats its row; the limiter counts the fresh ones.
CREATE TABLE IF NOT EXISTS queen_proxy.replicas (
    id           text PRIMARY KEY,
    instance     text NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now()
);

-- Each replica's smoothed demand per tenant (tokens asked per second). Unlogged:
-- it is rebuilt within seconds after a crash.
CREATE UNLOGGED TABLE IF NOT EXISTS queen_proxy.limiter_demand (
    replica_id text NOT NULL,
    tenant_id  text NOT NULL,
    requests   double precision NOT NULL,
    messages   double precision NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, replica_id)
);
