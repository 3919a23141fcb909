-- Timers (the 1.x timers API, docs/api.md "Timers"): a message promised for later. At
-- or after due_at a broker appends it to (queue_name, partition_name), with id
-- message_id (minted at schedule time) and transaction id txn, deleting the timer in
-- the same transaction: no "fired" state, so a timer fires once.
--
-- queue_name is the stored queue name, so a tenant's timers carry the tenant's prefix
-- like its queues (tenant:queue) and the key is (tenant scope, queue, timer_key).
-- timer_key is compared byte-wise (COLLATE "C"): the keyset list pages in byte order.
-- payload holds the delivered body as scheduled (sealed when encrypted is true).
-- claimed_until/claimed_by are a firing broker's lease on the row: while it is in the
-- future the timer is being fired, a reschedule or cancel answers too_late, and after
-- it another broker may claim the timer again. attempts/last_error count permanent
-- failures to append; due_at is pushed back by the failure's backoff.
CREATE TABLE IF NOT EXISTS queen.message_timers (
    queue_name     text NOT NULL,
    timer_key      text COLLATE "C" NOT NULL,
    partition_name text NOT NULL,
    due_at         timestamptz NOT NULL,
    txn            text NOT NULL,
    payload        bytea NOT NULL,
    payload_zstd   boolean NOT NULL DEFAULT false,
    encrypted      boolean NOT NULL DEFAULT false,
    message_id     uuid NOT NULL,
    producer_sub   text,
    attempts       integer NOT NULL DEFAULT 0,
    last_error     text,
    claimed_until  timestamptz,
    claimed_by     text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue_name, timer_key)
);

-- The firing loop takes the earliest due timers first.
CREATE INDEX IF NOT EXISTS message_timers_due_at_idx ON queen.message_timers (due_at);

-- Timers that failed to append on every attempt. queen's dead-letter rows point at a
-- stored message, and a timer that could not be appended has none, so a dead timer is
-- kept here, with the queue, partition and group (__timer__) its dead letter would
-- have named, until an operator deletes it.
CREATE TABLE IF NOT EXISTS queen.message_timers_dead (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    queue_name     text NOT NULL,
    timer_key      text COLLATE "C" NOT NULL,
    partition_name text NOT NULL,
    consumer_group text NOT NULL DEFAULT '__timer__',
    txn            text NOT NULL,
    payload        bytea NOT NULL,
    payload_zstd   boolean NOT NULL,
    encrypted      boolean NOT NULL,
    message_id     uuid NOT NULL,
    producer_sub   text,
    retry_count    integer NOT NULL,
    error_message  text,
    created_at     timestamptz NOT NULL,
    failed_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS message_timers_dead_queue_idx ON queen.message_timers_dead (queue_name, failed_at);
