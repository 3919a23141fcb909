package bench

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
)

// The raw insert behind HTTP is a ceiling, but it must do what it claims: store the
// rows of every request it answers, in the partitions in turn, and answer each with
// the ids it stored.
func TestHTTPRawStoresWhatItAnswers(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	d := &database{pool: pgtest.NewDB(t)}
	pids, err := d.rawQueue(ctx, "bench-raw", 3)
	require.NoError(t, err)
	const batch = 4
	srv, err := d.startHTTPRaw(pids, `{"a":1}`, batch)
	require.NoError(t, err)
	load, err := newHTTPLoad(srv.url, "")
	require.NoError(t, err)
	defer load.close()

	// Through the load generator's own push: 201 and the batch counted.
	push := load.pushOp(pushSpec{queue: "bench-raw", batch: batch, rr: newRoundRobin(3), payload: constPayload(`{"a":1}`)}, 1)
	for range 5 {
		n, err := push(ctx, 0)
		require.NoError(t, err)
		require.Equal(t, batch, n)
	}
	// One more by hand, to read its answer.
	var buf bytes.Buffer
	status, err := load.do(ctx, http.MethodPost, "/api/v1/push", []byte(`{"items":[]}`), &buf)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, status)
	var answer []struct {
		Index         int    `json:"index"`
		Status        string `json:"status"`
		TransactionID string `json:"transactionId"`
		MessageID     string `json:"messageId"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &answer), buf.String())
	require.Len(t, answer, batch)
	for i, a := range answer {
		require.Equal(t, i, a.Index)
		require.Equal(t, "queued", a.Status)
		var stored bool
		require.NoError(t, d.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM queen.messages
			WHERE id = $1::uuid AND transaction_id = $2 AND payload = '{"a":1}'::jsonb)`, a.MessageID, a.TransactionID).Scan(&stored))
		require.True(t, stored, "answered %+v, not stored", a)
	}

	// Six requests of 4 rows, round robin over 3 partitions: 8 rows in each.
	rows, err := d.pool.Query(ctx, `SELECT count(*) FROM queen.messages WHERE partition_id = ANY($1::uuid[]) GROUP BY partition_id`, pids)
	require.NoError(t, err)
	var counts []int
	for rows.Next() {
		var n int
		require.NoError(t, rows.Scan(&n))
		counts = append(counts, n)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []int{8, 8, 8}, counts)

	// Only the push is served.
	status, err = load.do(ctx, http.MethodGet, "/api/v1/push", nil, &buf)
	require.NoError(t, err)
	require.Equal(t, http.StatusMethodNotAllowed, status)
	require.NoError(t, srv.close(ctx))
}

// The raw insert behind HTTP runs on the run's own database: with -url it is refused
// by name, not skipped in silence.
func TestHTTPRawNeedsTheRunsOwnDatabase(t *testing.T) {
	t.Parallel()
	o := Options{URL: "http://127.0.0.1:6632", Only: []string{"push_b1", "http_raw_b1"}}
	o.defaults()
	require.ErrorContains(t, o.validate(), "http_raw_b1 needs a database of the run's own")
	o.Only = []string{"push_b1"}
	require.NoError(t, o.validate())
}
