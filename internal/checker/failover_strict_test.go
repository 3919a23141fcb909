package checker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
	"github.com/queenmq/queen/internal/patronitest"
)

// strictStall bounds how long a request may take while the primary holds commits for
// a standby that is down: QUEEN_DB_COMMIT_STALL_MS (2 s by default) and a look at the
// backend, with room for a loaded machine, and well under the 8 s the deadline alone
// would take (DB_STATEMENT_TIMEOUT 3 s + 5 s, three times for the push's pipeline).
const strictStall = 5 * time.Second

// TestStrictStandbyDown runs a broker on a two-node cluster in Patroni's strict
// synchronous mode and kills the standby: the primary then holds every commit until
// a standby confirms it. While it does, every push must be answered "buffered" within
// strictStall (those to a partition whose ordering lock a held push keeps included,
// which would otherwise fail with statement_timeout), a pop must answer 503 as fast,
// and the backends held on the primary must not pile up with the attempts. Once the
// standby is back, every push answered is delivered exactly once, and pushes are
// queued again.
func TestStrictStandbyDown(t *testing.T) {
	t.Parallel()
	pc := patronitest.Start(t, patronitest.Options{Nodes: 2, Strict: true})
	env := append(brokerSettings(pc.Env()), "DB_STATEMENT_TIMEOUT=3000")
	brokers := startClusterEnv(t, env, 1)
	c := client.New(brokers.urls[0], client.WithRetries(0))
	ctx := t.Context()

	push := func(i int) (string, time.Duration, error) {
		begin := time.Now()
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		res, err := c.Push(rctx, api.PushItem{Queue: "strict", Partition: "p", TransactionID: strictTxn(i),
			Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
		if err != nil {
			return "", time.Since(begin), err
		}
		return res[0].Status, time.Since(begin), nil
	}
	// A pop ended while its commit is held commits its lease when the wait is
	// cancelled, without an answer: the partition is leased to no one until the lease
	// runs out.
	lease := 3
	_, err := c.Configure(ctx, api.ConfigureRequest{Queue: "strict", Options: &api.QueueOptions{LeaseTime: &lease}})
	require.NoError(t, err)
	st, _, err := push(0)
	require.NoError(t, err)
	require.Equal(t, "queued", st)

	leader, err := pc.Leader(ctx)
	require.NoError(t, err)
	standby := pc.Nodes()[0]
	if standby == leader {
		standby = pc.Nodes()[1]
	}
	require.NoError(t, pc.Kill(ctx, standby))

	// Four producers on one partition, as a queue's ordering lock sees them.
	const producers, each = 4, 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		slowest time.Duration
	)
	for w := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				i := 1 + w*each + j
				st, took, err := push(i)
				mu.Lock()
				slowest = max(slowest, took)
				mu.Unlock()
				if assert.NoError(t, err, "push %d while the standby is down", i) {
					assert.Equal(t, "buffered", st, "push %d while the standby is down", i)
					assert.LessOrEqual(t, took, strictStall, "push %d while the standby is down", i)
				}
				if !sleepCtx(ctx, 300*time.Millisecond) {
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("the slowest of %d pushes while the standby is down: %s", producers*each, slowest.Round(time.Millisecond))

	begin := time.Now()
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	_, err = c.Pop(pctx, client.PopOptions{Queue: "strict", Batch: 10})
	cancel()
	took := time.Since(begin)
	t.Logf("a pop while the standby is down: %v in %s", err, took.Round(time.Millisecond))
	var qe *client.Error
	require.True(t, errors.As(err, &qe), "a pop while the standby is down: %v", err)
	require.Equal(t, http.StatusServiceUnavailable, qe.StatusCode, "a pop while the standby is down: %v", err)
	require.LessOrEqual(t, took, strictStall, "a pop while the standby is down")

	held := heldForStandby(t, pc.URL(leader), strictStall)
	t.Logf("backends held for the standby for more than %s after %d pushes and a pop: %v", strictStall, producers*each, held)
	require.LessOrEqual(t, len(held), 1, "backends held for the standby on the primary: the broker's sentinel commit at most")
	st, _, err = push(1000)
	require.NoError(t, err)
	require.Equal(t, "buffered", st, "a push while commits are held")

	require.NoError(t, pc.Start(ctx, standby))
	require.NoError(t, pc.WaitHealthy(ctx))
	queued := time.Now()
	require.Eventually(t, func() bool {
		st, _, err := push(2000)
		return err == nil && st != "buffered"
	}, 30*time.Second, 200*time.Millisecond, "pushes queued again once the standby confirms commits")
	t.Logf("pushes queued again %s after the standby was healthy", time.Since(queued).Round(time.Millisecond))

	want := map[string]bool{strictTxn(0): true, strictTxn(1000): true, strictTxn(2000): true}
	for i := 1; i <= producers*each; i++ {
		want[strictTxn(i)] = true
	}
	got := map[string]int{}
	deadline := time.Now().Add(time.Minute)
	for len(got) < len(want) && time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := c.Pop(pctx, client.PopOptions{Queue: "strict", Batch: 50, Wait: true, Timeout: time.Second})
		cancel()
		if err != nil || len(resp.Messages) == 0 {
			continue
		}
		req := api.AckBatchRequest{}
		for _, m := range resp.Messages {
			got[m.TransactionID]++
			req.Acknowledgments = append(req.Acknowledgments, api.AckItem{TransactionID: m.TransactionID,
				PartitionID: m.PartitionID, LeaseID: resp.LeaseID, Status: "completed"})
		}
		_, err = c.AckBatch(ctx, req)
		require.NoError(t, err)
	}
	for id := range want {
		assert.Equal(t, 1, got[id], "deliveries of %s", id)
	}
	assert.Len(t, got, len(want), "messages delivered: %v", got)
}

func strictTxn(i int) string { return fmt.Sprintf("m%04d", i) }

// heldForStandby lists the statements of the backends of the server at url that
// have waited longer than d for a synchronous standby to confirm their commit.
func heldForStandby(t *testing.T, url string, d time.Duration) []string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.WithoutCancel(t.Context())) }()
	rows, err := conn.Query(t.Context(), `SELECT left(query, 60) FROM pg_stat_activity
		WHERE wait_event = 'SyncRep' AND clock_timestamp() - query_start > $1`, d)
	require.NoError(t, err)
	held, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return held
}
