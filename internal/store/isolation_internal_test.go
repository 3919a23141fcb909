package store

import (
	"testing"
	"time"

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

// A timeout of 0 means none, whatever default the role or database sets: the session
// settings are sent as 0, not left out.
func TestTimeoutsOfZeroOverrideTheDatabasesDefaults(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.NewDBURL(t)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `DO $$ BEGIN
		EXECUTE format('ALTER DATABASE %I SET statement_timeout = 1500', current_database());
		EXECUTE format('ALTER DATABASE %I SET lock_timeout = 1500', current_database());
		EXECUTE format('ALTER DATABASE %I SET idle_in_transaction_session_timeout = 1500', current_database());
		END $$`)
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))

	settings := `SELECT current_setting('statement_timeout'), current_setting('lock_timeout'),
		current_setting('idle_in_transaction_session_timeout')`
	for _, tc := range []struct {
		opts Options
		want [3]string
	}{
		{Options{}, [3]string{"0", "0", "0"}},
		{Options{StatementTimeout: 4 * time.Second, LockTimeout: 2 * time.Second, IdleInTxTimeout: 3 * time.Second},
			[3]string{"4s", "2s", "3s"}},
	} {
		tc.opts.ConnString, tc.opts.MaxConns = url, 1
		st, err := Open(tc.opts)
		require.NoError(t, err)
		var got [3]string
		require.NoError(t, st.pool.QueryRow(ctx, settings).Scan(&got[0], &got[1], &got[2]))
		st.Close()
		require.Equal(t, tc.want, got, "%+v", tc.opts)
	}
}
