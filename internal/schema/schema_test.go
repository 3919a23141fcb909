package schema_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/schema"
)

func TestApplyIsIdempotentAndRecordsTheVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDBURL(t))
	require.NoError(t, err)
	defer conn.Close(ctx)

	// A cloned test database already carries this version: Apply is a no-op.
	require.NoError(t, schema.Apply(ctx, conn))

	// Forget the version: Apply runs every file again over the existing objects.
	_, err = conn.Exec(ctx, `DELETE FROM queen.schema_version`)
	require.NoError(t, err)
	require.NoError(t, schema.Apply(ctx, conn))
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM queen.schema_version WHERE version = $1`, schema.Version()).Scan(&n))
	require.Equal(t, 1, n)
}

// A version recorded over a database missing one of the schemas the DDL creates (a
// dump of the schema queen alone restored, the streams' schema left behind) is applied
// again, and the missing schema comes back.
func TestApplyRecreatesAMissingSchemaUnderARecordedVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDBURL(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	require.Equal(t, []string{"queen", "queen_streams"}, schema.Schemas())
	_, err = conn.Exec(ctx, `DROP SCHEMA queen_streams CASCADE`)
	require.NoError(t, err)
	require.NoError(t, schema.Apply(ctx, conn))
	var ok bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT to_regclass('queen_streams.queries') IS NOT NULL`).Scan(&ok))
	require.True(t, ok, "the streams' tables after the apply")
}

func TestApplyOnAnEmptyDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDBURL(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `DROP SCHEMA queen CASCADE`)
	require.NoError(t, err)
	require.NoError(t, schema.Apply(ctx, conn))
	var ok bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT to_regprocedure('queen.push_q2(text[],text[],integer[],text[],text[],text,text[],text[],boolean[])') IS NOT NULL`).Scan(&ok))
	require.True(t, ok, "the functions exist after a fresh apply")
}

// Queues a push created for a 1.x client's UUID tenant before the prefix was known took
// namespace and task from the stored name, prefix included; an apply gives them the
// relative name's, and leaves a namespace set otherwise alone.
func TestApplyRepairsNamespacesOfUUIDTenantQueues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDBURL(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	const u = "0198f2c1-b0c1-7a2e-9a51-3c7d2e8f0a11"
	_, err = conn.Exec(ctx, `INSERT INTO queen.queues (name, namespace, task) VALUES
		($1 || ':shop.cart', $1 || ':shop', 'cart'), ($1 || ':orders', $1 || ':orders', ''),
		($1 || ':set.x', 'mine', 'x'), ('acme:ledger.post', 'ledger', 'post')`, u)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `DELETE FROM queen.schema_version`)
	require.NoError(t, err)
	require.NoError(t, schema.Apply(ctx, conn))
	rows, err := conn.Query(ctx, `SELECT name, namespace || '|' || task FROM queen.queues ORDER BY name`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
		var v [2]string
		return v, r.Scan(&v[0], &v[1])
	})
	require.NoError(t, err)
	require.Equal(t, [][2]string{{u + ":orders", "orders|"}, {u + ":set.x", "mine|x"}, {u + ":shop.cart", "shop|cart"},
		{"acme:ledger.post", "ledger|post"}}, got)
}
