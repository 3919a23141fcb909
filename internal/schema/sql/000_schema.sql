-- queen schema and version bookkeeping.
CREATE SCHEMA IF NOT EXISTS queen;

CREATE TABLE IF NOT EXISTS queen.schema_version (
    version    text PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);
