package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/testwait"
)

// A partition deleted (by the cleanup job, or an operator) after a push resolved it
// but before the push took its append lock makes the insert fail on the foreign key;
// the push is retried, creates the partition again and stores the message once.
func TestPushRecreatesAPartitionDeletedBeforeItsLock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, admin := openStore(t, 4)

	ids := queue.NewIDGenerator()
	first, err := st.MessageInsertBatch(ctx, benchItems(ids, 1, "p"))
	require.NoError(t, err)
	oldPID := first[0].PartitionID

	holder, err := admin.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(context.Background()) }()
	_, err = holder.Exec(ctx, `SELECT pg_advisory_xact_lock(queen.partition_order_key($1::uuid))`, oldPID)
	require.NoError(t, err)

	type outcome struct {
		res []queue.PushResult
		err error
	}
	done := make(chan outcome, 1)
	items := benchItems(ids, 1, "p")
	go func() {
		res, err := st.MessageInsertBatch(ctx, items)
		done <- outcome{res, err}
	}()

	// Wait until the push is blocked on the append lock (it resolved the partition).
	testwait.For(t, 10*time.Second, 5*time.Millisecond, func() error {
		select {
		case o := <-done:
			t.Fatalf("push finished without waiting: %+v %v", o.res, o.err)
		default:
		}
		var waiting bool
		require.NoError(t, admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
			WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`).Scan(&waiting))
		if !waiting {
			return errors.New("push never waited for the partition lock")
		}
		return nil
	})
	_, err = holder.Exec(ctx, `DELETE FROM queen.partitions WHERE id = $1::uuid`, oldPID)
	require.NoError(t, err)
	require.NoError(t, holder.Commit(ctx))

	o := <-done
	require.NoError(t, o.err)
	require.Equal(t, queue.StatusQueued, o.res[0].Status)
	require.NotEqual(t, oldPID, o.res[0].PartitionID, "the partition was created again")

	var stored int
	var payload json.RawMessage
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*), min(payload::text)::jsonb FROM queen.messages WHERE partition_id = $1::uuid`,
		o.res[0].PartitionID).Scan(&stored, &payload))
	require.Equal(t, 1, stored)
	require.JSONEq(t, string(benchPayload), string(payload))
}
