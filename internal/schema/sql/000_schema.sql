-- queen schema and version bookkeeping.
CREATE SCHEMA IF NOT EXISTS queen;

CREATE TABLE IF NOT EXISTS queen.schema_version (
    version    text PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now(),
    level      integer
);

-- level numbers the schema (it rises with every change of these files): a broker that
-- applies no DDL (QUEEN_APPLY_SCHEMA=0) serves a database whose highest recorded level
-- is at least its own, since changes only add. Versions recorded before levels existed
-- have none. The catalog is read first: ALTER TABLE locks the table even when the
-- column exists.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute
                   WHERE attrelid = 'queen.schema_version'::regclass AND attname = 'level' AND NOT attisdropped) THEN
        ALTER TABLE queen.schema_version ADD COLUMN level integer;
    END IF;
END
$$;
