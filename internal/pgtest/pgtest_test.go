package pgtest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/schema"
)

func TestNewDB(t *testing.T) {
	t.Parallel()

	t.Run("DatabasesAreIsolated", func(t *testing.T) {
		t.Parallel()
		a, b := NewDB(t), NewDB(t)

		var nameA, nameB string
		require.NoError(t, a.QueryRow(t.Context(), "SELECT current_database()").Scan(&nameA))
		require.NoError(t, b.QueryRow(t.Context(), "SELECT current_database()").Scan(&nameB))
		require.True(t, strings.HasPrefix(nameA, "queen_t_"), nameA)
		require.NotEqual(t, nameA, nameB)

		_, err := a.Exec(t.Context(), "CREATE TABLE queen.only_in_a (id int)")
		require.NoError(t, err)
		var inA, inB bool
		const q = "SELECT to_regclass('queen.only_in_a') IS NOT NULL"
		require.NoError(t, a.QueryRow(t.Context(), q).Scan(&inA))
		require.NoError(t, b.QueryRow(t.Context(), q).Scan(&inB))
		require.True(t, inA)
		require.False(t, inB)
	})

	t.Run("HasTheCurrentSchema", func(t *testing.T) {
		t.Parallel()
		db := NewDB(t)

		var versions []string
		rows, err := db.Query(t.Context(), "SELECT version FROM queen.schema_version")
		require.NoError(t, err)
		versions, err = pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.Equal(t, []string{schema.Version()}, versions)
	})

	t.Run("PoolIsSmall", func(t *testing.T) {
		t.Parallel()
		db := NewDB(t)
		require.EqualValues(t, poolSize, db.Config().MaxConns)
	})

	t.Run("ManyInParallel", func(t *testing.T) {
		t.Parallel()
		for i := range 6 {
			t.Run(fmt.Sprintf("DB%d", i), func(t *testing.T) {
				t.Parallel()
				var one int
				require.NoError(t, NewDB(t).QueryRow(t.Context(), "SELECT 1").Scan(&one))
				require.Equal(t, 1, one)
			})
		}
	})
}

func TestNewDBURL(t *testing.T) {
	t.Parallel()

	t.Run("ConnectsToAFreshDatabase", func(t *testing.T) {
		t.Parallel()
		dbURL := NewDBURL(t)
		conn, err := pgx.Connect(t.Context(), dbURL)
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close(context.Background()) })

		var name string
		require.NoError(t, conn.QueryRow(t.Context(), "SELECT current_database()").Scan(&name))
		require.True(t, strings.HasPrefix(name, "queen_t_"), name)
		require.Contains(t, dbURL, "/"+name)
	})

	t.Run("DropsTheDatabaseOfAPassedTest", func(t *testing.T) {
		t.Parallel()
		URL(t) // skip here under -short, not only in Inner
		var name string
		t.Run("Inner", func(t *testing.T) {
			conn, err := pgx.Connect(t.Context(), NewDBURL(t))
			require.NoError(t, err)
			require.NoError(t, conn.QueryRow(t.Context(), "SELECT current_database()").Scan(&name))
			// Left open on purpose: the drop must force it out.
		})
		require.NotEmpty(t, name)
		require.False(t, databaseExistsT(t, name), "database %s still exists", name)
	})
}

func TestEnsureTemplate(t *testing.T) {
	t.Parallel()

	// Builders racing on one name stand in for test processes racing: each uses its own
	// connection, so the session advisory lock works exactly as across processes.
	t.Run("ConcurrentBuildersAgree", func(t *testing.T) {
		t.Parallel()
		adminURL := URL(t)
		name := "queen_tmpl_race_" + randomHex(4)
		t.Cleanup(func() {
			conn, err := pgx.Connect(context.Background(), adminURL)
			require.NoError(t, err)
			defer conn.Close(context.Background())
			for _, db := range []string{name, name + "_build"} {
				// A template cannot be dropped; the _build database does not exist.
				_, _ = conn.Exec(context.Background(), "ALTER DATABASE "+ident(db)+" WITH IS_TEMPLATE false")
				_, err = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+ident(db)+" WITH (FORCE)")
				require.NoError(t, err)
			}
		})

		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() { errs[i] = ensureTemplate(t.Context(), adminURL, name) })
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		require.True(t, databaseExistsT(t, name))
		require.False(t, databaseExistsT(t, name+"_build"))

		conn, err := pgx.Connect(t.Context(), adminURL)
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
		var isTemplate, allowConn bool
		require.NoError(t, conn.QueryRow(t.Context(),
			"SELECT datistemplate, datallowconn FROM pg_database WHERE datname = $1", name).Scan(&isTemplate, &allowConn))
		require.True(t, isTemplate)
		require.False(t, allowConn)
	})
}

func TestWithDatabase(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name, in, want string
		wantErr        bool
	}{
		{name: "ReplacesPath", in: "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", want: "postgres://postgres@127.0.0.1:5432/queen_t_x?sslmode=disable"},
		{name: "AddsPath", in: "postgresql://u:p@h:1?sslmode=disable", want: "postgresql://u:p@h:1/queen_t_x?sslmode=disable"},
		{name: "RejectsKeywordValue", in: "host=h dbname=postgres", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := withDatabase(tc.in, "queen_t_x")
			if tc.wantErr {
				require.ErrorContains(t, err, EnvURL)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func databaseExistsT(t *testing.T, name string) bool {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), URL(t))
	require.NoError(t, err)
	defer conn.Close(context.Background())
	ok, err := databaseExists(t.Context(), conn, name)
	require.NoError(t, err)
	return ok
}
