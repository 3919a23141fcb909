package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
	"github.com/queenmq/queen/internal/pgtest"
)

// TestHazardMalformedInputFailsBatch: upstream lets inputs that
// only fail inside SQL (a traceId that is not a UUID, names and transaction ids over
// 255 characters) abort the whole merged procedure call, failing every request
// merged with them. Such a request must get a 400 of its own while good requests
// sent at the same moment succeed, and nothing of the bad ones is stored.
func TestHazardMalformedInputFailsBatch(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)
	const q = "malformed"
	long := strings.Repeat("x", 256)
	bad := []api.PushItem{
		{Queue: q, TraceID: "not-a-uuid", Payload: json.RawMessage(`"bad"`)},
		{Queue: q, TransactionID: long, Payload: json.RawMessage(`"bad"`)},
		{Queue: q, Partition: long, Payload: json.RawMessage(`"bad"`)},
		{Queue: long, Payload: json.RawMessage(`"bad"`)},
	}
	const rounds = 5
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make(chan error, rounds*(len(bad)+1))
	for r := range rounds {
		for i, it := range bad {
			wg.Go(func() {
				good := api.PushItem{Queue: q, Payload: json.RawMessage(`"good"`)}
				_, err := tb.client.Push(ctx, good, it)
				if !client.IsInvalidArgument(err) {
					errs <- fmt.Errorf("round %d, bad item %d: want a 400, got %v", r, i, err)
				}
			})
		}
		wg.Go(func() {
			res, err := tb.client.Push(ctx, api.PushItem{Queue: q, TransactionID: fmt.Sprintf("good-%d", r), Payload: json.RawMessage(`"good"`)})
			if err != nil || len(res) != 1 || res[0].Status != api.PushStatusQueued {
				errs <- fmt.Errorf("round %d, good request: %v %+v", r, err, res)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, Batch: 100, AutoAck: true})
	require.NoError(t, err)
	require.Len(t, got.Messages, rounds, "exactly the good requests' messages are stored")
	for _, m := range got.Messages {
		require.True(t, strings.HasPrefix(m.TransactionID, "good-"), "a good request's message: %s", m.TransactionID)
	}
}

// TestHazardQueueDeleteKeepsSubscriptions: upstream leaves the
// queue's consumer-group subscriptions behind when it deletes the queue, so a queue
// re-created under the same name serves a "new" group from its old subscription
// time. The re-created queue must start the group afresh.
func TestHazardQueueDeleteKeepsSubscriptions(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)
	const q = "recreated"
	newGroup := client.PopOptions{Queue: q, ConsumerGroup: "g", SubscriptionMode: api.SubscriptionModeNew, Batch: 10, AutoAck: true}
	push(t, tb, q, "", `"before-subscription"`)
	first, err := tb.client.Pop(ctxT(t), newGroup)
	require.NoError(t, err)
	require.Empty(t, first.Messages, "a new group skips the history")

	del, err := tb.client.DeleteQueue(ctxT(t), q)
	require.NoError(t, err)
	require.True(t, del.Existed)
	push(t, tb, q, "", `"history-of-the-new-queue"`)
	again, err := tb.client.Pop(ctxT(t), newGroup)
	require.NoError(t, err)
	require.Empty(t, again.Messages, "the group subscribes afresh to the re-created queue: its history is skipped")

	push(t, tb, q, "", `"after"`)
	next, err := tb.client.Pop(ctxT(t), newGroup)
	require.NoError(t, err)
	require.Equal(t, []string{`"after"`}, payloads(t, next.Messages))
}

// TestHazardTimestampsNotUTC: upstream formats timestamps in the
// session time zone and appends Z, so a server whose database is not in UTC reports
// wrong times. With the database's default time zone set to America/New_York, the
// createdAt and expiresAt the broker reports must be UTC.
func TestHazardTimestampsNotUTC(t *testing.T) {
	t.Parallel()

	dbURL := pgtest.NewDBURL(t)
	conn, err := pgx.Connect(ctxT(t), dbURL)
	require.NoError(t, err)
	var db string
	require.NoError(t, conn.QueryRow(ctxT(t), `SELECT current_database()`).Scan(&db))
	_, err = conn.Exec(ctxT(t), `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` SET timezone = 'America/New_York'`)
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctxT(t)))
	conn, err = pgx.Connect(ctxT(t), dbURL)
	require.NoError(t, err)
	defer conn.Close(context.WithoutCancel(ctxT(t)))
	var tz string
	require.NoError(t, conn.QueryRow(ctxT(t), `SHOW timezone`).Scan(&tz))
	require.Equal(t, "America/New_York", tz, "new sessions default to New York time")

	tb := startBrokerOn(t, dbURL)
	configure(t, tb, "tz", api.QueueOptions{LeaseTime: api.Int(10)})
	before := time.Now()
	push(t, tb, "tz", "", `"m"`)
	got, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: "tz"})
	require.NoError(t, err)
	require.Len(t, got.Messages, 1)
	created := got.Messages[0].CreatedAt
	at, err := time.Parse(api.TimeLayoutMicros, created)
	require.NoError(t, err, "createdAt %q has the layout %s", created, api.TimeLayoutMicros)
	require.WithinRange(t, at, before.Add(-2*time.Second), time.Now().Add(2*time.Second), "createdAt %s is UTC", created)
	var stored string
	require.NoError(t, conn.QueryRow(ctxT(t), `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
		FROM queen.messages`).Scan(&stored))
	require.Equal(t, stored, created, "createdAt is the stored time in UTC")

	ext, err := tb.client.ExtendLease(ctxT(t), got.LeaseID, 60)
	require.NoError(t, err)
	require.True(t, ext.Success, "%+v", ext)
	require.NotNil(t, ext.ExpiresAt)
	exp, err := time.Parse(api.TimeLayoutMillis, *ext.ExpiresAt)
	require.NoError(t, err, "expiresAt %q", *ext.ExpiresAt)
	require.WithinRange(t, exp, time.Now().Add(55*time.Second), time.Now().Add(65*time.Second), "expiresAt %s is UTC", *ext.ExpiresAt)
}

// TestHazardNoWakeupWithoutUDP: upstream wakes parked long-polls
// only when UDP sync is enabled, and never after a transaction's push. On a broker
// whose long-polls re-check only every 10 minutes, a push and a transaction push
// must each answer a parked pop at once.
func TestHazardNoWakeupWithoutUDP(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name string
		push func(t *testing.T, tb *testBundle, q string)
	}{
		{"Push", func(t *testing.T, tb *testBundle, q string) { push(t, tb, q, "", `"wake"`) }},
		{"Transaction", func(t *testing.T, tb *testBundle, q string) {
			res, err := tb.client.Transaction(ctxT(t), api.TransactionRequest{Operations: []api.TxOperation{
				{Type: api.TxOpPush, Items: []api.PushItem{{Queue: q, Payload: json.RawMessage(`"wake"`)}}},
			}})
			require.NoError(t, err)
			require.True(t, res.Success, "%+v", res)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := "wake-" + strings.ToLower(tc.name)
			tb, parked := setupParked(t, q)
			tc.push(t, tb, q)
			timer := time.NewTimer(30 * time.Second)
			defer timer.Stop()
			select {
			case a := <-parked:
				require.NoError(t, a.err)
				require.Equal(t, http.StatusOK, a.status, "%s", a.body)
				var resp api.PopResponse
				require.NoError(t, json.Unmarshal(a.body, &resp))
				require.Equal(t, []string{`"wake"`}, payloads(t, resp.Messages))
			case <-timer.C:
				require.FailNow(t, "the parked pop was not woken", "its own re-check is 10 minutes away")
			}
		})
	}
}
