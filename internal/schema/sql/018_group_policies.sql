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

-- queen.group_policy_store_q1 stores p_group's policy on p_queue unless it has one
-- (conflation: p_conflation, NULL meaning false). The broker runs it in a transaction
-- of its own when a pop finds the group without a policy (queen.pop_q4 then claims
-- nothing), and pops again: the policy a group's first pops see is committed before
-- any of them delivers or acks, whichever of them stored it. A deleted queue stores
-- nothing.
CREATE OR REPLACE FUNCTION queen.group_policy_store_q1(p_queue text, p_group text, p_conflation boolean)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO queen.consumer_group_policies (queue_id, consumer_group, conflation)
    SELECT q.id, p_group, coalesce(p_conflation, false) FROM queen.queues q WHERE q.name = p_queue
    ON CONFLICT (queue_id, consumer_group) DO NOTHING
$$;
