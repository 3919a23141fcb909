package store

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
)

// A database whose default isolation is REPEATABLE READ still runs queen's statements
// in READ COMMITTED, which a push's ordering relies on.
func TestSessionsRunInReadCommitted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.NewDBURL(t)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_isolation = %L',
		current_database(), 'repeatable read'); END $$`)
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))

	plain, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer plain.Close(ctx) //nolint:errcheck // test teardown
	var level string
	require.NoError(t, plain.QueryRow(ctx, `SHOW transaction_isolation`).Scan(&level))
	require.Equal(t, "repeatable read", level, "the database's default, for a plain session")

	st, err := Open(Options{ConnString: url, MaxConns: 1})
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.pool.QueryRow(ctx, `SHOW transaction_isolation`).Scan(&level))
	require.Equal(t, "read committed", level)
}
