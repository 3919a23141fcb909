CREATE SCHEMA IF NOT EXISTS queen_proxy;

CREATE TABLE IF NOT EXISTS queen_proxy.schema_version (
    version    text PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);
