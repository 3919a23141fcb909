-- A consumer group's delivery policy on a queue, stored by the group's first pop of
-- the queue (queen.pop_q4) and fixed from then on: the pops of every consumer of the
-- group follow it, whatever they ask, until the group is deleted on the queue. The one
-- policy is conflation (last-value delivery, see docs/api.md): per claimed partition
-- only the newest visible message is delivered, and its ack moves the cursor past every
-- message before it. A group without a row (one that never popped the queue since
-- policies exist) has no conflation; its next pop stores what it asks.
DO $$
BEGIN
    IF to_regclass('queen.consumer_group_policies') IS NULL THEN
        CREATE TABLE queen.consumer_group_policies (
            queue_id       uuid NOT NULL REFERENCES queen.queues(id) ON DELETE CASCADE,
            consumer_group varchar(255) NOT NULL,
            conflation     boolean NOT NULL,
            created_at     timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (queue_id, consumer_group)
        );
    END IF;
END
$$;

-- queen.group_policy_key is the advisory-lock key a pop holds, taken without waiting,
-- to store a group's policy on a queue: a second first pop of the group meanwhile does
-- not wait for the first one's transaction (a pop waits for no other pop's); it goes by
-- what it asked, and the policy is what the first one stores.
CREATE OR REPLACE FUNCTION queen.group_policy_key(p_queue uuid, p_group text)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT hashtextextended(p_queue::text || '/' || p_group, 20161101)
$$;
