package schema_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/proxy/schema"
)

// apply runs schema.Apply on a connection of its own from pool.
func apply(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	return schema.Apply(ctx, conn.Conn())
}

func versions(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT version FROM queen_proxy.schema_version ORDER BY version`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

func TestFilesSQLAndVersion(t *testing.T) {
	t.Parallel()
	files := schema.Files()
	require.NotEmpty(t, files)
	require.True(t, slices.IsSorted(files), "apply order is the lexical order of the names: %v", files)
	require.Equal(t, "000_schema.sql", files[0], "the file creating the schema and its version table comes first")

	sql := schema.SQL()
	last := -1
	for _, f := range files {
		i := strings.Index(sql, f)
		require.Greater(t, i, last, "%s is in SQL, after the files before it", f)
		last = i
	}
	require.Contains(t, sql, "CREATE SCHEMA IF NOT EXISTS queen_proxy")

	require.NotEmpty(t, schema.Version())
	require.Equal(t, schema.Version(), schema.Version(), "the version is a pure function of the DDL")
}

func TestApplyIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewDB(t)

	var exists bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'queen_proxy')`).Scan(&exists))
	require.False(t, exists, "the test database starts without the proxy schema")

	require.NoError(t, apply(ctx, pool))
	require.Equal(t, []string{schema.Version()}, versions(t, pool))
	for _, table := range []string{"tenants", "api_keys", "audit_log", "replicas", "limiter_demand", "usage_minute",
		"usage_hour", "users", "sessions", "cells", "tenant_moves"} {
		var reg *string
		require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass('queen_proxy.' || $1)::text`, table).Scan(&reg))
		require.NotNil(t, reg, "table %s", table)
	}
	_, err := pool.Exec(ctx, `INSERT INTO queen_proxy.tenants (id, name, limits, quotas) VALUES ('acme', 'Acme', '{}', '{}')`)
	require.NoError(t, err)

	// Again with this version recorded: nothing changes.
	require.NoError(t, apply(ctx, pool))
	require.Equal(t, []string{schema.Version()}, versions(t, pool))

	// Again with the record gone, as after an upgrade: every statement runs a second
	// time over the existing objects, and the data stays.
	_, err = pool.Exec(ctx, `DELETE FROM queen_proxy.schema_version`)
	require.NoError(t, err)
	require.NoError(t, apply(ctx, pool))
	require.Equal(t, []string{schema.Version()}, versions(t, pool))
	var name string
	require.NoError(t, pool.QueryRow(ctx, `SELECT name FROM queen_proxy.tenants WHERE id = 'acme'`).Scan(&name))
	require.Equal(t, "Acme", name)
}

func TestConcurrentAppliesAllSucceed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewDB(t) // 4 connections: every apply has one of its own

	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = apply(ctx, pool) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "apply %d", i)
	}
	require.Equal(t, []string{schema.Version()}, versions(t, pool))
}

// TestApplyLeavesTheBrokerSchemaAlone checks that a database shared with a broker
// keeps the broker's schema and version record untouched.
func TestApplyLeavesTheBrokerSchemaAlone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewDB(t) // cloned from the broker's schema template

	snapshot := func() []string {
		rows, err := pool.Query(ctx, `SELECT n.nspname || '.' || c.relname FROM pg_class c
			JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'queen' ORDER BY 1`)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return out
	}
	before := snapshot()
	require.NotEmpty(t, before, "the template carries the broker's schema")
	require.NoError(t, apply(ctx, pool))
	require.Equal(t, before, snapshot())
}

// A proxy database made before push keys (api_keys' scope CHECK listing read, write
// and admin) adopts the wider list on the next apply, keeping its keys; the CHECK
// still refuses other scopes.
func TestKeyScopeCheckTakesPush(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewDB(t)
	require.NoError(t, apply(ctx, pool))
	_, err := pool.Exec(ctx, `
		INSERT INTO queen_proxy.tenants (id, name, limits, quotas) VALUES ('acme', 'Acme', '{}', '{}');
		ALTER TABLE queen_proxy.api_keys DROP CONSTRAINT api_keys_scope_check;
		ALTER TABLE queen_proxy.api_keys ADD CONSTRAINT api_keys_scope_check CHECK (scope IN ('read', 'write', 'admin'));
		INSERT INTO queen_proxy.api_keys (id, tenant_id, scope, key_hash) VALUES ('old', 'acme', 'write', '\x00');
		DELETE FROM queen_proxy.schema_version`)
	require.NoError(t, err)
	insert := func(id, scope string) error {
		_, err := pool.Exec(ctx, `INSERT INTO queen_proxy.api_keys (id, tenant_id, scope, key_hash) VALUES ($1, 'acme', $2, '\x00')`, id, scope)
		return err
	}
	isCheckViolation := func(err error) bool {
		var pgErr *pgconn.PgError
		return errors.As(err, &pgErr) && pgErr.Code == "23514" && pgErr.ConstraintName == "api_keys_scope_check"
	}
	require.True(t, isCheckViolation(insert("early", "push")), "the old CHECK refuses push")

	require.NoError(t, apply(ctx, pool))
	require.NoError(t, insert("producer", "push"))
	require.True(t, isCheckViolation(insert("owner", "owner")), "other scopes are still refused")
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM queen_proxy.api_keys WHERE id = 'old'`).Scan(&n))
	require.Equal(t, 1, n, "the existing key stays")

	// A second apply over the widened CHECK changes nothing.
	_, err = pool.Exec(ctx, `DELETE FROM queen_proxy.schema_version`)
	require.NoError(t, err)
	require.NoError(t, apply(ctx, pool))
	rows, err := pool.Query(ctx, `SELECT pg_get_constraintdef(oid) FROM pg_constraint
		WHERE conrelid = 'queen_proxy.api_keys'::regclass AND contype = 'c'`)
	require.NoError(t, err)
	defs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Len(t, defs, 1, "one scope CHECK: %v", defs)
	require.Contains(t, defs[0], "'push'")
}
