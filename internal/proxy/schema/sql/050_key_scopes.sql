-- Key scopes gain 'push' (a producer key: push and timer scheduling only). The CHECK
-- of 010_tenants.sql is unnamed there, so PostgreSQL named it api_keys_scope_check;
-- it is re-created under that name with the wider list, only when the list in place
-- lacks 'push', so that a re-apply leaves the table alone.
DO $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM pg_constraint
        WHERE conrelid = 'queen_proxy.api_keys'::regclass AND conname = 'api_keys_scope_check'
          AND pg_get_constraintdef(oid) LIKE '%''push''%') THEN
        ALTER TABLE queen_proxy.api_keys DROP CONSTRAINT IF EXISTS api_keys_scope_check;
        ALTER TABLE queen_proxy.api_keys ADD CONSTRAINT api_keys_scope_check
            CHECK (scope IN ('push', 'read', 'write', 'admin'));
    END IF;
END
$$;
