package schema_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/schema"
)

// TestQueueOptionsRecordOnUpgrade: the first apply that adds queen.queues.queen_options
// keeps the ttl, retryDelay and maxSize an earlier queen applied, except upstream's defaults, and
// records nothing on a database adopted from upstream.
func TestQueueOptionsRecordOnUpgrade(t *testing.T) {
	t.Parallel()

	// applied is, per queue, the ttl, retryDelay and maxSize pop, ack and push apply after the schema is
	// applied again without the column, as a database older than it is.
	applied := func(t *testing.T, previousVersion string) map[string][3]int {
		t.Helper()
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, pgtest.NewDBURL(t))
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, `INSERT INTO queen.queues (name, ttl, retry_delay, max_queue_size) VALUES
			('custom-values', 600, 250, 0), ('upstream-defaults', 3600, 1000, 0),
			('ttl-default-only', 3600, 500, 0), ('off', 0, 0, 0), ('capped', 3600, 1000, 50)`)
		require.NoError(t, err)
		_, err = conn.Exec(ctx, `ALTER TABLE queen.queues DROP COLUMN queen_options`)
		require.NoError(t, err)
		_, err = conn.Exec(ctx, `DELETE FROM queen.schema_version`)
		require.NoError(t, err)
		if previousVersion != "" {
			_, err = conn.Exec(ctx, `INSERT INTO queen.schema_version (version) VALUES ($1)`, previousVersion)
			require.NoError(t, err)
		}
		require.NoError(t, schema.Apply(ctx, conn))

		rows, err := conn.Query(ctx, `SELECT name, queen.enforced_option_q1(ttl, queen_options, 'ttl'),
			queen.enforced_option_q1(retry_delay, queen_options, 'retryDelay'),
			queen.enforced_option_q1(max_queue_size, queen_options, 'maxSize') FROM queen.queues`)
		require.NoError(t, err)
		out := map[string][3]int{}
		for rows.Next() {
			var name string
			var v [3]int
			require.NoError(t, rows.Scan(&name, &v[0], &v[1], &v[2]))
			out[name] = v
		}
		require.NoError(t, rows.Err())
		return out
	}

	t.Run("DatabaseAnEarlierQueenServed", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, map[string][3]int{
			"custom-values":     {600, 250, 0},
			"upstream-defaults": {0, 0, 0},
			"ttl-default-only":  {0, 500, 0},
			"off":               {0, 0, 0},
			"capped":            {0, 0, 50},
		}, applied(t, "0123456789abcdef"))
	})

	t.Run("DatabaseAdoptedFromUpstream", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, map[string][3]int{
			"custom-values":     {0, 0, 0},
			"upstream-defaults": {0, 0, 0},
			"ttl-default-only":  {0, 0, 0},
			"off":               {0, 0, 0},
			"capped":            {0, 0, 0},
		}, applied(t, ""))
	})
}
