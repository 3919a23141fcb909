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
