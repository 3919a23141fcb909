package broker_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// rawPayloads reads the stored payloads by transaction id, bypassing the broker.
func rawPayloads(t *testing.T, url string) map[string]string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT transaction_id, payload::text FROM queen.messages`)
	require.NoError(t, err)
	out := map[string]string{}
	for rows.Next() {
		var id, p string
		require.NoError(t, rows.Scan(&id, &p))
		out[id] = p
	}
	require.NoError(t, rows.Err())
	return out
}
