package store_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// TestAckRunsAgainAfterADeadlock makes PostgreSQL abort an ack the way a deadlock
// does (SQLSTATE 40P01, raised by a trigger on the cursor row it updates): aborted
// once, the ack runs again and answers success with the cursor moved once; aborted
// every time, it fails after three attempts, naming the deadlock, with the cursor
// unmoved.
func TestAckRunsAgainAfterADeadlock(t *testing.T) {
	t.Parallel()
	st, db := openStore(t, 4)
	ctx := t.Context()
	ids := queue.NewIDGenerator()
	push := make([]queue.PushItem, 2)
	for i := range push {
		push[i] = queue.PushItem{Queue: "dl", Partition: "p", TransactionID: []string{"a", "b"}[i],
			MessageID: ids.New(), Payload: []byte(`{}`)}
	}
	_, err := st.MessageInsertBatch(ctx, push)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `
CREATE SEQUENCE deadlocks;
CREATE TABLE deadlock_budget (n integer);
INSERT INTO deadlock_budget VALUES (1);
CREATE FUNCTION abort_as_deadlock() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF nextval('deadlocks') <= (SELECT n FROM deadlock_budget) THEN
        RAISE EXCEPTION 'deadlock detected (simulated)' USING ERRCODE = '40P01';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER abort_as_deadlock BEFORE UPDATE OF last_consumed_id ON queen.partition_consumers
    FOR EACH ROW EXECUTE FUNCTION abort_as_deadlock();`)
	require.NoError(t, err)

	ack := func(lease string, m queue.Message) ([]queue.AckResult, error) {
		return st.MessageAckBatch(ctx, queue.QueueModeGroup, []queue.Ack{{TransactionID: m.TransactionID,
			PartitionID: m.PartitionID, LeaseID: lease, Status: queue.AckCompleted}})
	}
	cursor := func() string {
		var id *string
		require.NoError(t, db.QueryRow(ctx, `SELECT last_consumed_id::text FROM queen.partition_consumers`).Scan(&id))
		if id == nil {
			return ""
		}
		return *id
	}

	msgs, err := st.PartitionClaim(ctx, queue.PopRequest{Queue: "dl", ConsumerGroup: queue.QueueModeGroup, Batch: 1}, "L1")
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	res, err := ack("L1", msgs[0])
	require.NoError(t, err)
	require.True(t, res[0].Success, "%+v", res[0])
	require.Equal(t, msgs[0].ID, cursor())
	var calls int64
	require.NoError(t, db.QueryRow(ctx, `SELECT last_value FROM deadlocks`).Scan(&calls))
	require.EqualValues(t, 2, calls, "aborted once, then run again")

	_, err = db.Exec(ctx, `UPDATE deadlock_budget SET n = 1000`)
	require.NoError(t, err)
	msgs, err = st.PartitionClaim(ctx, queue.PopRequest{Queue: "dl", ConsumerGroup: queue.QueueModeGroup, Batch: 1}, "L2")
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	before := cursor()
	_, err = ack("L2", msgs[0])
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "40P01", pgErr.Code)
	require.NoError(t, db.QueryRow(ctx, `SELECT last_value FROM deadlocks`).Scan(&calls))
	require.EqualValues(t, 5, calls, "three attempts in all")
	require.Equal(t, before, cursor(), "a failed ack moves nothing")
}
