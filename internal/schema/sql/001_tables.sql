-- Core tables, with upstream Queen 0.15's names, columns and index names, so that a
-- database written by an upstream broker can be served in place and an upstream broker
-- can still boot on a database queen created. Additive only, but for one constraint:
-- the foreign key from messages to partitions, which the triggers below replace.
--
-- How a table evolves, whoever created it:
--   * A missing table is created with every index it needs, in upstream's layout
--     (the indexes are built on an empty table, inside the boot transaction).
--   * A column queen needs and an existing table lacks is added by a guarded
--     ALTER TABLE ... ADD COLUMN IF NOT EXISTS with a default that needs no rewrite.
--     The guard reads the catalog first: ALTER TABLE takes an ACCESS EXCLUSIVE lock
--     even when the column exists, held until the boot commits.
--   * Indexes an existing table lacks are never built here: CREATE INDEX takes a SHARE
--     lock (blocking writes) even when the index exists, and builds a missing one on a
--     possibly huge table while holding it. internal/schema/concurrent.go builds them
--     CONCURRENTLY after the broker is ready (its list must match the indexes below).
--   * Upstream's columns keep their types; queen's other shapes live in its own tables.

-- A message's partition must exist while the message does. Upstream declares that as a
-- foreign key (messages.partition_id -> partitions ON DELETE CASCADE), which PostgreSQL
-- checks row by row: a lookup of the partition in key-share mode for every inserted
-- message, a quarter to a third of what a batched insert costs (docs/benchmarks.md). queen
-- keeps the same rule with two triggers instead, and drops the foreign key:
--   * queen_message_partition_check, before a message is inserted (or moved to another
--     partition), takes the partition's row in key-share mode, exactly as the foreign
--     key's check does, and refuses a missing partition with foreign_key_violation
--     (23503), which push_q3 and the store retry as a partition deleted meanwhile. It
--     skips the rows of a push (the direct push, store/push_direct*.go, and
--     queen.push_q3) into partitions whose rows the push has already taken in
--     key-share mode and then named in the transaction's queen.push_pid /
--     queen.push_pids settings: those rows cannot lose their partition before the
--     push commits.
--   * queen_partition_messages_delete, after a partition row is deleted (directly, or
--     by its queue's cascade, as upstream's queue delete does), deletes its messages, as
--     the foreign key's cascade did. A delete of a partition waits for the pushes that
--     hold its row; its messages are then read with a snapshot taken after them.
-- Both are named apart from upstream's triggers, which upstream drops and re-creates
-- by name at every boot, and an upstream broker booting on this database inserts and
-- deletes under the same rule.
CREATE OR REPLACE FUNCTION queen.message_partition_check_q1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM queen.partitions p WHERE p.id = NEW.partition_id FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'insert or update on table "messages": partition % does not exist', NEW.partition_id
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION queen.partition_messages_delete_q1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.messages m WHERE m.partition_id = OLD.id;
    RETURN NULL;
END;
$$;

-- queen.message_partition_triggers_q1 puts the two triggers in place of the foreign key
-- on a database that has queen.messages; the catalog is read first, so that a boot with
-- everything in place takes no lock (dropping the key locks messages, then partitions:
-- the order in which a producer's insert locks them).
CREATE OR REPLACE FUNCTION queen.message_partition_triggers_q1() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT k.conname FROM pg_constraint k
             WHERE k.conrelid = 'queen.messages'::regclass AND k.contype = 'f'
               AND k.confrelid = 'queen.partitions'::regclass
    LOOP
        EXECUTE format('ALTER TABLE queen.messages DROP CONSTRAINT %I', c.conname);
    END LOOP;
    IF NOT EXISTS (SELECT 1 FROM pg_trigger
                   WHERE tgrelid = 'queen.messages'::regclass AND tgname = 'queen_message_partition_check') THEN
        CREATE TRIGGER queen_message_partition_check
            BEFORE INSERT OR UPDATE OF partition_id ON queen.messages
            FOR EACH ROW
            WHEN (strpos(coalesce(current_setting('queen.push_pids', true), '')
                         || coalesce(current_setting('queen.push_pid', true), ''), NEW.partition_id::text) = 0)
            EXECUTE FUNCTION queen.message_partition_check_q1();
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_trigger
                   WHERE tgrelid = 'queen.partitions'::regclass AND tgname = 'queen_partition_messages_delete') THEN
        CREATE TRIGGER queen_partition_messages_delete
            AFTER DELETE ON queen.partitions
            FOR EACH ROW EXECUTE FUNCTION queen.partition_messages_delete_q1();
    END IF;
END;
$$;

-- queen.messages of an earlier schema (queen's or upstream's) gains the W3C trace
-- context (traceparent, tracestate headers) a message was pushed under, returned with it
-- on pop so a consumer continues the producer's trace; NULL for messages pushed without
-- one (a NULL costs a bit of the row's null map, and adding the columns rewrites
-- nothing). This is the boot's first table lock: a producer's insert locks messages
-- before the tables it reads (queues, partitions), so locking messages after one of
-- those would deadlock with it.
DO $$
BEGIN
    IF to_regclass('queen.messages') IS NOT NULL THEN
        IF NOT EXISTS (SELECT 1 FROM pg_attribute
                       WHERE attrelid = to_regclass('queen.messages') AND attname = 'tracestate' AND NOT attisdropped) THEN
            ALTER TABLE queen.messages ADD COLUMN IF NOT EXISTS traceparent text,
                                       ADD COLUMN IF NOT EXISTS tracestate text;
        END IF;
    END IF;
END
$$;

-- An existing messages table: its foreign key gives way to the triggers here, while
-- messages is still the first table the boot locks.
DO $$
BEGIN
    IF to_regclass('queen.messages') IS NOT NULL AND to_regclass('queen.partitions') IS NOT NULL THEN
        PERFORM queen.message_partition_triggers_q1();
    END IF;
END
$$;

DO $$
BEGIN
    IF to_regclass('queen.queues') IS NULL THEN
        CREATE TABLE queen.queues (
            id                          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            name                        varchar(255) NOT NULL UNIQUE,
            namespace                   varchar(255),
            task                        varchar(255),
            priority                    integer DEFAULT 0,
            lease_time                  integer DEFAULT 300,
            retry_limit                 integer DEFAULT 3,
            retry_delay                 integer DEFAULT 1000,
            ttl                         integer DEFAULT 3600,
            dead_letter_queue           boolean DEFAULT false,
            dlq_after_max_retries       boolean DEFAULT false,
            delayed_processing          integer DEFAULT 0,
            window_buffer               integer DEFAULT 0,
            retention_seconds           integer DEFAULT 0,
            completed_retention_seconds integer DEFAULT 0,
            retention_enabled           boolean DEFAULT false,
            encryption_enabled          boolean DEFAULT false,
            max_wait_time_seconds       integer DEFAULT 0,
            max_queue_size              integer DEFAULT 0,
            created_at                  timestamptz DEFAULT now(),
            updated_at                  timestamptz DEFAULT now()
        );
        -- Redundant with the unique constraint, but upstream's boot creates it by name.
        CREATE INDEX idx_queues_name ON queen.queues (name);
    END IF;
    -- queen's configure records when a queue was last configured.
    IF NOT EXISTS (SELECT 1 FROM pg_attribute
                   WHERE attrelid = 'queen.queues'::regclass AND attname = 'updated_at' AND NOT attisdropped) THEN
        ALTER TABLE queen.queues ADD COLUMN IF NOT EXISTS updated_at timestamptz DEFAULT now();
    END IF;
END
$$;

CREATE TABLE IF NOT EXISTS queen.partitions (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    queue_id      uuid NOT NULL REFERENCES queen.queues(id) ON DELETE CASCADE,
    name          varchar(255) NOT NULL DEFAULT 'Default',
    created_at    timestamptz DEFAULT now(),
    last_activity timestamptz DEFAULT now(),
    UNIQUE (queue_id, name)
);

-- messages has one unique index on (partition_id, transaction_id), under upstream's
-- name (upstream's boot checks only the name; its ON CONFLICT accepts any collation) but
-- byte-wise (COLLATE "C"): with the database's collation every comparison in the index
-- descent is a strcoll() call, and queen's dedup and ack lookups cost three times as
-- much (measured on C.UTF-8). Equality is the same under both, so uniqueness is
-- unchanged; queen's lookups say COLLATE "C" to use it. On a database upstream created,
-- the name holds upstream's index in the database collation, and queen's byte-wise
-- idx_messages_partition_transaction_c is built concurrently beside it after boot
-- (internal/schema/concurrent.go); until it is valid, queen's lookups scan the message's
-- partition in an index led by partition_id (correct, slower on big partitions).
DO $$
BEGIN
    IF to_regclass('queen.messages') IS NULL THEN
        CREATE TABLE queen.messages (
            id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            transaction_id varchar(255) NOT NULL,
            partition_id   uuid NOT NULL, -- must exist: queen.message_partition_triggers_q1
            payload        jsonb NOT NULL,
            trace_id       uuid DEFAULT gen_random_uuid(),
            created_at     timestamptz NOT NULL DEFAULT now(),
            is_encrypted   boolean DEFAULT false,
            producer_sub   text,
            traceparent    text,
            tracestate     text
        );
        CREATE UNIQUE INDEX messages_partition_transaction_unique
            ON queen.messages (partition_id, transaction_id COLLATE "C");
        CREATE INDEX idx_messages_partition_created
            ON queen.messages (partition_id, created_at, id);
        PERFORM queen.message_partition_triggers_q1();
    END IF;
END
$$;

DO $$
BEGIN
    IF to_regclass('queen.partition_consumers') IS NULL THEN
        CREATE TABLE queen.partition_consumers (
            id                       uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            partition_id             uuid NOT NULL REFERENCES queen.partitions(id) ON DELETE CASCADE,
            consumer_group           varchar(255) NOT NULL DEFAULT '__QUEUE_MODE__',
            last_consumed_id         uuid DEFAULT '00000000-0000-0000-0000-000000000000',
            last_consumed_created_at timestamptz,
            lease_acquired_at        timestamptz,
            lease_expires_at         timestamptz,
            worker_id                varchar(255),
            batch_size               integer DEFAULT 0,
            acked_count              integer DEFAULT 0,
            batch_retry_count        integer DEFAULT 0,
            total_messages_consumed  bigint DEFAULT 0,
            total_batches_consumed   bigint DEFAULT 0,
            last_consumed_at         timestamptz,
            message_batch            jsonb,
            pending_estimate         bigint DEFAULT 0,
            last_stats_update        timestamptz,
            created_at               timestamptz DEFAULT now(),
            UNIQUE (partition_id, consumer_group),
            CONSTRAINT partition_consumers_cursor_consistency CHECK (
                (last_consumed_id = '00000000-0000-0000-0000-000000000000') = (last_consumed_created_at IS NULL)
            )
        ) WITH (fillfactor = 50,
                autovacuum_vacuum_scale_factor = 0.01,
                autovacuum_vacuum_threshold = 50,
                autovacuum_vacuum_cost_delay = 0);
        CREATE INDEX idx_partition_consumers_worker_id_active
            ON queen.partition_consumers (worker_id) WHERE worker_id IS NOT NULL;
    END IF;
END
$$;

DO $$
BEGIN
    IF to_regclass('queen.partition_lookup') IS NULL THEN
        CREATE TABLE queen.partition_lookup (
            id                      bigserial PRIMARY KEY,
            queue_name              varchar(255) NOT NULL REFERENCES queen.queues(name) ON DELETE CASCADE,
            partition_id            uuid NOT NULL REFERENCES queen.partitions(id) ON DELETE CASCADE,
            last_message_id         uuid NOT NULL,
            last_message_created_at timestamptz NOT NULL,
            updated_at              timestamptz NOT NULL DEFAULT now(),
            UNIQUE (queue_name, partition_id)
        ) WITH (fillfactor = 50,
                autovacuum_vacuum_scale_factor = 0.01,
                autovacuum_vacuum_threshold = 50,
                autovacuum_vacuum_cost_delay = 0);
        CREATE INDEX idx_partition_lookup_partition_id ON queen.partition_lookup (partition_id);
    END IF;
END
$$;

DO $$
BEGIN
    IF to_regclass('queen.consumer_groups_metadata') IS NULL THEN
        CREATE TABLE queen.consumer_groups_metadata (
            id                     bigserial PRIMARY KEY,
            consumer_group         varchar(255) NOT NULL,
            queue_name             varchar(255) NOT NULL DEFAULT '',
            partition_name         varchar(255) NOT NULL DEFAULT '',
            namespace              varchar(255) NOT NULL DEFAULT '',
            task                   varchar(255) NOT NULL DEFAULT '',
            subscription_mode      varchar(32),
            subscription_timestamp timestamptz,
            created_at             timestamptz DEFAULT now(),
            UNIQUE (consumer_group, queue_name, partition_name, namespace, task)
        );
        CREATE INDEX idx_consumer_groups_metadata_lookup
            ON queen.consumer_groups_metadata (consumer_group, queue_name, namespace, task);
    END IF;
END
$$;

CREATE TABLE IF NOT EXISTS queen.consumer_watermarks (
    queue_name         varchar(255) NOT NULL,
    consumer_group     varchar(255) NOT NULL DEFAULT '__QUEUE_MODE__',
    last_empty_scan_at timestamptz NOT NULL DEFAULT 'epoch',
    updated_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue_name, consumer_group)
);

DO $$
BEGIN
    IF to_regclass('queen.dead_letter_queue') IS NULL THEN
        CREATE TABLE queen.dead_letter_queue (
            id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            message_id          uuid NOT NULL REFERENCES queen.messages(id) ON DELETE CASCADE,
            partition_id        uuid NOT NULL REFERENCES queen.partitions(id) ON DELETE CASCADE,
            consumer_group      varchar(255),
            error_message       text,
            retry_count         integer DEFAULT 0,
            original_created_at timestamptz,
            failed_at           timestamptz DEFAULT now()
        );
        CREATE INDEX idx_dlq_partition ON queen.dead_letter_queue (partition_id);
        CREATE INDEX idx_dlq_consumer_group ON queen.dead_letter_queue (consumer_group);
        CREATE INDEX idx_dlq_failed_at ON queen.dead_letter_queue (failed_at DESC);
        CREATE INDEX idx_dlq_message_consumer ON queen.dead_letter_queue (message_id, consumer_group);
    END IF;
END
$$;

DO $$
BEGIN
    IF to_regclass('queen.system_state') IS NULL THEN
        CREATE TABLE queen.system_state (
            key        varchar(255) PRIMARY KEY,
            value      jsonb NOT NULL,
            updated_at timestamptz DEFAULT now()
        );
        -- Redundant with the primary key; upstream's boot creates it by name.
        CREATE INDEX idx_system_state_key ON queen.system_state (key);
    END IF;
END
$$;

-- Traces are looked up by (transaction_id, partition_id) in the database collation
-- (idx_message_traces_transaction_partition serves queen's lookups too); message_id and
-- partition_id are indexed for the cascades from messages and partitions.
DO $$
BEGIN
    IF to_regclass('queen.message_traces') IS NULL THEN
        CREATE TABLE queen.message_traces (
            id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            message_id     uuid REFERENCES queen.messages(id) ON DELETE CASCADE,
            partition_id   uuid REFERENCES queen.partitions(id) ON DELETE CASCADE,
            transaction_id varchar(255),
            consumer_group varchar(255),
            event_type     varchar(100) DEFAULT 'info',
            data           jsonb,
            created_at     timestamptz DEFAULT now(),
            worker_id      varchar(255)
        );
        CREATE INDEX idx_message_traces_message_id ON queen.message_traces (message_id);
        CREATE INDEX idx_message_traces_transaction_partition
            ON queen.message_traces (transaction_id, partition_id);
        CREATE INDEX idx_message_traces_created_at ON queen.message_traces (created_at DESC);
        CREATE INDEX idx_message_traces_partition_id ON queen.message_traces (partition_id);
    END IF;
END
$$;

-- Upstream's layout: the names of a trace, keyed by (trace_id, trace_name). A database
-- an earlier queen created also has an id and a created_at column, which nothing reads.
DO $$
BEGIN
    IF to_regclass('queen.message_trace_names') IS NULL THEN
        CREATE TABLE queen.message_trace_names (
            trace_id   uuid NOT NULL REFERENCES queen.message_traces(id) ON DELETE CASCADE,
            trace_name text NOT NULL,
            PRIMARY KEY (trace_id, trace_name)
        );
        CREATE INDEX idx_message_trace_names_name ON queen.message_trace_names (trace_name);
        CREATE INDEX idx_message_trace_names_trace_id ON queen.message_trace_names (trace_id);
    END IF;
END
$$;
