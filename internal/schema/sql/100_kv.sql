-- queen.kv_entries: the KV store of the 1.x API (POST /api/v1/kv, the path and console
-- routes, the kv rider of /api/v1/transaction; docs/api.md "KV store"). One row per
-- (tenant, ns, key): tenant is the request's tenant ("" = global scope), so a tenant never
-- sees another's namespaces. Names compare in byte order (COLLATE "C") for listings,
-- cursors and the apply order. value is jsonb: the client gets back the JSON value it
-- sent (whitespace and object key order normalised, as the 1.x brokers store it), and
-- incr adds to it in SQL. version comes from one global sequence, new on every write;
-- expires_at NULL means forever. A row with expires_at <= now is absent for every read
-- and predicate; the kv_sweep maintenance job deletes such rows in batches. queen's own
-- table: an upstream broker never reads it. Additive only.
CREATE SEQUENCE IF NOT EXISTS queen.kv_version_seq;

CREATE TABLE IF NOT EXISTS queen.kv_entries (
    tenant     text COLLATE "C" NOT NULL DEFAULT '',
    ns         text COLLATE "C" NOT NULL,
    key        text COLLATE "C" NOT NULL,
    value      jsonb NOT NULL,
    version    bigint NOT NULL,
    expires_at timestamptz,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (tenant, ns, key)
);

CREATE INDEX IF NOT EXISTS kv_entries_expires_at_idx
    ON queen.kv_entries (expires_at) WHERE expires_at IS NOT NULL;

-- queen.kv_write_q1 applies one validated write op (put, delete or incr; putIfAbsent is
-- put with expect 0) to one key at p_now and reports the verdict: o_applied, o_reason
-- (exists|absent|version|limit|type when not applied), and the value and version now
-- live (the written ones, the deleted ones for a delete, else the current live ones;
-- 'null'/0 when none). The row is locked FOR UPDATE; a missing row is inserted with
-- ON CONFLICT DO NOTHING and, when a concurrent call inserted it first, read again under
-- its lock, so of concurrent putIfAbsent calls on one key exactly one applies.
-- p_expect NULL = unconditional; p_expires_at NULL = forever. incr: p_delta added to a
-- live number (absent or expired counts as 0 and takes p_expires_at; a live key keeps its
-- expiry); a result outside [p_min, p_max] writes nothing (reason limit).
CREATE OR REPLACE FUNCTION queen.kv_write_q1(
    p_tenant text, p_ns text, p_key text, p_op text, p_value jsonb, p_expect bigint,
    p_expires_at timestamptz, p_delta numeric, p_min numeric, p_max numeric, p_now timestamptz,
    OUT o_applied boolean, OUT o_reason text, OUT o_value jsonb, OUT o_version bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r       queen.kv_entries%ROWTYPE;
    found_r boolean;
    live    boolean;
    cur     numeric;
    res     numeric;
    new_val jsonb;
    new_exp timestamptz;
BEGIN
    LOOP
        SELECT * INTO r FROM queen.kv_entries
         WHERE tenant = p_tenant AND ns = p_ns AND key = p_key FOR UPDATE;
        found_r := FOUND;
        live := found_r AND (r.expires_at IS NULL OR r.expires_at > p_now);
        o_applied := false;
        o_value := CASE WHEN live THEN r.value ELSE 'null'::jsonb END;
        o_version := CASE WHEN live THEN r.version ELSE 0 END;

        IF p_op = 'delete' THEN
            IF p_expect IS NULL THEN
                IF NOT live THEN o_reason := 'absent'; RETURN; END IF;
            ELSIF p_expect = 0 THEN
                IF live THEN o_reason := 'exists'; RETURN; END IF;
                IF found_r THEN
                    DELETE FROM queen.kv_entries WHERE tenant = p_tenant AND ns = p_ns AND key = p_key;
                END IF;
                o_applied := true;
                RETURN;
            ELSE
                IF NOT live THEN o_reason := 'absent'; RETURN; END IF;
                IF r.version <> p_expect THEN o_reason := 'version'; RETURN; END IF;
            END IF;
            DELETE FROM queen.kv_entries WHERE tenant = p_tenant AND ns = p_ns AND key = p_key;
            o_applied := true;
            RETURN;
        END IF;

        IF p_op = 'incr' THEN
            IF live THEN
                IF jsonb_typeof(r.value) <> 'number' THEN
                    o_reason := 'type'; o_value := '0'::jsonb; RETURN;
                END IF;
                cur := (r.value #>> '{}')::numeric;
                new_exp := r.expires_at;
            ELSE
                cur := 0;
                new_exp := p_expires_at;
            END IF;
            res := cur + p_delta;
            IF (p_min IS NOT NULL AND res < p_min) OR (p_max IS NOT NULL AND res > p_max) THEN
                o_reason := 'limit';
                IF NOT live THEN o_value := '0'::jsonb; END IF;
                RETURN;
            END IF;
            new_val := to_jsonb(trim_scale(res));
        ELSE -- put
            IF p_expect IS NOT NULL THEN
                IF p_expect = 0 AND live THEN o_reason := 'exists'; RETURN; END IF;
                IF p_expect > 0 AND NOT live THEN o_reason := 'absent'; RETURN; END IF;
                IF p_expect > 0 AND r.version <> p_expect THEN o_reason := 'version'; RETURN; END IF;
            END IF;
            new_val := p_value;
            new_exp := p_expires_at;
        END IF;

        o_version := nextval('queen.kv_version_seq');
        o_value := new_val;
        o_applied := true;
        IF found_r THEN
            UPDATE queen.kv_entries
               SET value = new_val, version = o_version, expires_at = new_exp, updated_at = p_now
             WHERE tenant = p_tenant AND ns = p_ns AND key = p_key;
            RETURN;
        END IF;
        INSERT INTO queen.kv_entries (tenant, ns, key, value, version, expires_at, updated_at)
        VALUES (p_tenant, p_ns, p_key, new_val, o_version, new_exp, p_now)
        ON CONFLICT (tenant, ns, key) DO NOTHING;
        IF FOUND THEN RETURN; END IF;
        -- A concurrent call inserted the key first: decide again under its row lock.
    END LOOP;
END;
$$;
