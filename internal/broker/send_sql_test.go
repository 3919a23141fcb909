package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
)

// sqlBundle is a broker running its wake-up loops on a new database, and a pool on that
// database for the application's own transactions.
type sqlBundle struct {
	b  *broker.Broker
	db *pgxpool.Pool
}

func setupSQL(t *testing.T, opts ...func(*broker.Config)) *sqlBundle {
	t.Helper()
	url := pgtest.NewDBURL(t)
	db, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return &sqlBundle{b: replica(t, url, opts...), db: db}
}

func (sb *sqlBundle) pop(t *testing.T, q string, n int) []queue.Message {
	t.Helper()
	req := queue.PopRequest{Queue: q, Batch: n, AutoAck: true}
	require.NoError(t, sb.b.NormalizePop(&req))
	res, err := sb.b.Pop(t.Context(), req)
	require.NoError(t, err)
	return res.Messages
}

// sqlState is the SQLSTATE of err, "" when it is not a PostgreSQL error.
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

func TestSendFromSQL(t *testing.T) {
	t.Parallel()
	// Only a wake-up can end a parked pop early: the broker never re-checks on its own.
	sb := setupSQL(t, slowPolls(2*time.Hour))
	ctx := t.Context()

	t.Run("RolledBackLeavesNothing", func(t *testing.T) {
		t.Parallel()
		tx, err := sb.db.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `SELECT * FROM queen.send('sql-rollback', 'p', '{"n":1}', 'r1')`)
		require.NoError(t, err)
		require.NoError(t, tx.Rollback(ctx))
		require.Empty(t, sb.pop(t, "sql-rollback", 10))
		var queues int
		require.NoError(t, sb.db.QueryRow(ctx, `SELECT count(*) FROM queen.queues WHERE name = 'sql-rollback'`).Scan(&queues))
		require.Zero(t, queues, "not even the queue stays")
	})

	t.Run("CommittedIsPoppedDedupedAndWakes", func(t *testing.T) {
		t.Parallel()
		got := parkPop(t, sb.b, "sql-outbox")
		tx, err := sb.db.Begin(ctx)
		require.NoError(t, err)
		var id1, tx1, st1 string
		require.NoError(t, tx.QueryRow(ctx, `SELECT message_id::text, transaction_id, status FROM queen.send('sql-outbox', 'orders', '{"order":1}', 'o-1')`).
			Scan(&id1, &tx1, &st1))
		require.Equal(t, []string{"o-1", "queued"}, []string{tx1, st1})
		select {
		case res := <-got:
			t.Fatalf("woken before the commit: %v", res)
		default:
		}
		require.NoError(t, tx.Commit(ctx))
		select {
		case res := <-got:
			require.Equal(t, []string{"o-1"}, txids(res.Messages))
			require.Equal(t, id1, res.Messages[0].ID)
			require.JSONEq(t, `{"order":1}`, string(res.Messages[0].Payload))
			require.Equal(t, "orders", res.Messages[0].Partition)
		case <-time.After(30 * time.Second):
			t.Fatal("the commit of queen.send did not wake the parked pop")
		}

		// Dedup like a push: a repeat is a duplicate carrying the stored id, through SQL
		// and through the broker alike.
		tx, err = sb.db.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		var id2, st2, seqscan string
		require.NoError(t, tx.QueryRow(ctx, `SELECT message_id::text, status FROM queen.send('sql-outbox', 'orders', '{"order":2}', 'o-1')`).
			Scan(&id2, &st2))
		require.Equal(t, []string{id1, "duplicate"}, []string{id2, st2})
		// The duplicate's lookup restricts the planner inside queen.send only.
		require.NoError(t, tx.QueryRow(ctx, `SHOW enable_seqscan`).Scan(&seqscan))
		require.Equal(t, "on", seqscan, "planner settings do not leak into the caller's transaction")
		require.NoError(t, tx.Commit(ctx))
		res, err := sb.b.Push(ctx, []queue.PushItem{{Queue: "sql-outbox", Partition: "orders", TransactionID: "o-1", Payload: json.RawMessage(`3`)}})
		require.NoError(t, err)
		require.Equal(t, queue.StatusDuplicate, res[0].Status)
		require.Equal(t, id1, res[0].MessageID)
	})

	t.Run("BatchKeepsOrderAcrossQueues", func(t *testing.T) {
		t.Parallel()
		msgs := make([]map[string]any, 0, 30)
		for i := range 30 {
			msgs = append(msgs, map[string]any{"queue": fmt.Sprint("sql-batch-", i%2), "payload": i, "transactionId": fmt.Sprint("b", i)})
		}
		msgs = append(msgs, map[string]any{"queue": "sql-batch-0", "payload": "again", "transactionId": "b0"})
		body, err := json.Marshal(msgs)
		require.NoError(t, err)
		rows, err := sb.db.Query(ctx, `SELECT idx, status FROM queen.send_batch($1::jsonb)`, body)
		require.NoError(t, err)
		statuses, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			var i int
			var s string
			err := r.Scan(&i, &s)
			return fmt.Sprintf("%d %s", i, s), err
		})
		require.NoError(t, err)
		require.Len(t, statuses, 31)
		require.Equal(t, "0 queued", statuses[0])
		require.Equal(t, "30 duplicate", statuses[30])
		var want []string
		for i := 0; i < 30; i += 2 {
			want = append(want, fmt.Sprint("b", i))
		}
		require.Equal(t, want, txids(sb.pop(t, "sql-batch-0", 100)), "delivered in item order")
	})

	t.Run("Refusals", func(t *testing.T) {
		t.Parallel()
		opts := queue.DefaultOptions()
		opts.MaxSize = 1
		_, _, err := sb.b.Configure(ctx, queue.Queue{Name: "sql-full", Options: opts})
		require.NoError(t, err)
		// A sealed queue, as a broker with an encryption key configures it.
		_, err = sb.db.Exec(ctx, `INSERT INTO queen.queues (name, encryption_enabled) VALUES ('sql-sealed', true)`)
		require.NoError(t, err)
		_, err = sb.db.Exec(ctx, `SELECT * FROM queen.send('sql-full', NULL, '1')`)
		require.NoError(t, err)
		for _, tc := range []struct{ name, sql, state string }{
			{"FullQueue", `SELECT * FROM queen.send('sql-full', NULL, '2')`, "53400"},
			{"EncryptedQueue", `SELECT * FROM queen.send('sql-sealed', NULL, '1')`, "0A000"},
			{"NoQueue", `SELECT * FROM queen.send(NULL, NULL, '1')`, "22023"},
			{"LongTransactionID", `SELECT * FROM queen.send('q', NULL, '1', repeat('t', 256))`, "22023"},
			{"BadTraceID", `SELECT * FROM queen.send_batch('[{"queue":"q","traceId":"nope"}]')`, "22023"},
			{"NotAnArray", `SELECT * FROM queen.send_batch('{"queue":"q"}')`, "22023"},
		} {
			_, err := sb.db.Exec(ctx, tc.sql)
			require.Equal(t, tc.state, sqlState(err), "%s: %v", tc.name, err)
		}
		require.Len(t, sb.pop(t, "sql-full", 10), 1, "the refused message was not stored")

		tx, err := sb.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		_, err = tx.Exec(ctx, `SELECT * FROM queen.send('sql-rr', NULL, '1')`)
		require.Equal(t, "25000", sqlState(err), "%v", err)
	})

	t.Run("SendOnlyRole", func(t *testing.T) {
		t.Parallel()
		role := "queen_sender_" + fmt.Sprint(time.Now().UnixNano())
		_, err := sb.db.Exec(ctx, `CREATE ROLE `+role+` NOLOGIN`)
		require.NoError(t, err)
		t.Cleanup(func() {
			_, _ = sb.db.Exec(context.WithoutCancel(ctx), `DROP OWNED BY `+role)
			_, _ = sb.db.Exec(context.WithoutCancel(ctx), `DROP ROLE `+role)
		})
		_, err = sb.db.Exec(ctx, `GRANT USAGE ON SCHEMA queen TO `+role+`;
			GRANT EXECUTE ON FUNCTION queen.send(text, text, jsonb, text), queen.send_batch(jsonb) TO `+role)
		require.NoError(t, err)

		tx, err := sb.db.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `SET LOCAL ROLE `+role)
		require.NoError(t, err)
		var status string
		require.NoError(t, tx.QueryRow(ctx, `SELECT status FROM queen.send('sql-role', NULL, '"hi"', 'r-1')`).Scan(&status))
		require.Equal(t, "queued", status)
		_, err = tx.Exec(ctx, `SAVEPOINT s; INSERT INTO queen.queues (name) VALUES ('sneaky')`)
		require.Equal(t, "42501", sqlState(err), "no table privilege: %v", err)
		require.NoError(t, tx.Rollback(ctx))

		// Without the grant, a role that can use the schema cannot send.
		other := role + "_x"
		_, err = sb.db.Exec(ctx, `CREATE ROLE `+other+` NOLOGIN; GRANT USAGE ON SCHEMA queen TO `+other)
		require.NoError(t, err)
		t.Cleanup(func() {
			_, _ = sb.db.Exec(context.WithoutCancel(ctx), `DROP OWNED BY `+other)
			_, _ = sb.db.Exec(context.WithoutCancel(ctx), `DROP ROLE `+other)
		})
		tx, err = sb.db.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		_, err = tx.Exec(ctx, `SET LOCAL ROLE `+other+`; SELECT * FROM queen.send('sql-role', NULL, '1')`)
		require.Equal(t, "42501", sqlState(err), "EXECUTE is not granted to PUBLIC: %v", err)
	})
}
