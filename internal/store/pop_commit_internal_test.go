package store

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
)

// With PopAsyncCommit, a pop that wrote only leases and ready rows commits without
// waiting for its flush (synchronous_commit off for its transaction); a pop that
// registered its group or started a subscription, an autoAck pop, and every pop of a
// store without the option commit durably. Each pop runs the store's own statement
// with the store's own arguments in a transaction, which reads synchronous_commit as
// the commit will see it and then commits.
func TestOnlyAPopOfLeasesSkipsTheFlushWait(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.NewDBURL(t)
	async, err := Open(Options{ConnString: url, MaxConns: 2, PopAsyncCommit: true})
	require.NoError(t, err)
	t.Cleanup(async.Close)
	durable, err := Open(Options{ConnString: url, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(durable.Close)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.WithoutCancel(ctx)) })
	// The session's own value is what a durable pop commits with (the test cluster's
	// default may be off).
	_, err = conn.Exec(ctx, `SET synchronous_commit = on`)
	require.NoError(t, err)

	ids := queue.NewIDGenerator()
	var items []queue.PushItem
	for _, p := range []string{"a", "b", "c", "d", "e", "f"} {
		for i := range 3 {
			items = append(items, queue.PushItem{Queue: "q", Partition: p, TransactionID: p + string(rune('0'+i)),
				MessageID: ids.New(), Payload: json.RawMessage(`{"n":1}`)})
		}
	}
	_, err = durable.MessageInsertBatch(ctx, items)
	require.NoError(t, err)

	leases := 0
	// pop answers the (partition id, transaction id) of each message delivered under
	// its lease, and synchronous_commit as its commit saw it.
	type delivery struct{ pid, partition, txid, lease string }
	pop := func(st *Store, req queue.PopRequest) (got []delivery, syncCommit string) {
		t.Helper()
		req.Queue = "q"
		leases++
		lease := "lease-" + string(rune('a'+leases))
		if req.ConsumerGroup != queue.QueueModeGroup { // its policy, as Store.Claim stores it first
			_, err := conn.Exec(ctx, sqlGroupPolicyStore, req.Queue, req.ConsumerGroup, nil)
			require.NoError(t, err)
		}
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		rows, err := tx.Query(ctx, sqlPartitionClaim, st.claimArgs(req, lease)...)
		require.NoError(t, err)
		for rows.Next() {
			v, err := rows.Values()
			require.NoError(t, err)
			if v[2] == nil {
				continue // the row of the group's policy
			}
			got = append(got, delivery{pid: v[0].(string), partition: v[1].(string), txid: v[3].(string), lease: lease})
		}
		require.NoError(t, rows.Err())
		require.NoError(t, tx.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&syncCommit))
		require.NoError(t, tx.Commit(ctx))
		var after string
		require.NoError(t, conn.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&after))
		require.Equal(t, "on", after, "the pop's setting ended with its transaction")
		return got, syncCommit
	}
	ack := func(group string, got []delivery) {
		t.Helper()
		acks := make([]queue.Ack, len(got))
		for i, d := range got {
			acks[i] = queue.Ack{TransactionID: d.txid, PartitionID: d.pid, LeaseID: d.lease, Status: queue.AckCompleted}
		}
		res, err := durable.MessageAckBatch(ctx, group, acks)
		require.NoError(t, err)
		for _, r := range res {
			require.True(t, r.Success, "ack of %s: %s", r.TransactionID, r.Error)
		}
	}
	queueMode := queue.PopRequest{ConsumerGroup: queue.QueueModeGroup, Batch: 3}
	named := func(req queue.PopRequest, partition string) queue.PopRequest {
		req.Partition = partition
		return req
	}

	got, sc := pop(async, named(queueMode, "f"))
	require.Len(t, got, 3)
	require.Equal(t, "off", sc, "a pop naming a partition, in queue mode")
	got, sc = pop(async, queueMode)
	require.Len(t, got, 3)
	require.Equal(t, "on", sc, "the first wildcard pop registers queue mode")
	got, sc = pop(async, queueMode)
	require.Len(t, got, 3)
	require.Equal(t, "off", sc, "a wildcard pop in queue mode writes leases and ready rows only")
	got, sc = pop(durable, queueMode)
	require.Len(t, got, 3)
	require.Equal(t, "on", sc, "the same pop of a store without PopAsyncCommit")
	autoAck := queueMode
	autoAck.AutoAck = true
	got, sc = pop(async, autoAck)
	require.Len(t, got, 3)
	require.Equal(t, "on", sc, "an autoAck pop moves the cursor: an ack")

	group := queue.PopRequest{ConsumerGroup: "g", Batch: 1}
	got, sc = pop(async, group)
	require.Len(t, got, 1)
	require.Equal(t, "on", sc, "a group's first wildcard pop registers it and starts its subscription")
	ack("g", got)
	first := got[0].partition
	other := "b"
	if first == other {
		other = "c"
	}
	got, sc = pop(async, named(group, other))
	require.Len(t, got, 1)
	require.Equal(t, "on", sc, "the group's first claim of another partition starts its subscription there")
	got, sc = pop(async, named(group, first))
	require.Len(t, got, 1)
	require.Equal(t, "off", sc, "a pop of a partition where the group's cursor is set")
	ack("g", got)
	fresh := queue.PopRequest{ConsumerGroup: "h", Batch: 1, SubscriptionMode: "new"}
	got, sc = pop(async, named(fresh, "c"))
	require.Empty(t, got, "a new group subscribing to new messages")
	require.Equal(t, "on", sc, "its subscription start is stored")
}
