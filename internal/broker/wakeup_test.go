package broker_test

import (
	"context"
	url2 "net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
	"github.com/queenmq/queen/internal/testlog"
)

// replica opens a broker on url and runs its wake-up loops until the test ends.
func replica(t *testing.T, url string, opts ...func(*broker.Config)) *broker.Broker {
	t.Helper()
	st, err := store.Open(store.Options{ConnString: url, MaxConns: 4})
	require.NoError(t, err)
	b := broker.New(withConfig(opts...), st, testlog.Logger(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		st.Close()
	})
	return b
}

// parkPop starts a long-poll on b and returns the channel its result arrives on.
func parkPop(t *testing.T, b *broker.Broker, q string) <-chan queue.PopResult {
	t.Helper()
	req := queue.PopRequest{Queue: q, Wait: true, Timeout: time.Hour, AutoAck: true}
	require.NoError(t, b.NormalizePop(&req))
	got := make(chan queue.PopResult, 1)
	go func() {
		res, err := b.Pop(context.Background(), req)
		if err == nil {
			got <- res
		}
		close(got)
	}()
	require.Eventually(t, func() bool { return b.ParkedPolls() == 1 }, 10*time.Second, 5*time.Millisecond)
	return got
}

func TestPushOnOneReplicaWakesLongPollOnAnother(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDBURL(t)
	admin := pgtest.NewDB(t)
	// Replica B never re-checks on its own: only a notification can wake it.
	a := replica(t, url)
	b := replica(t, url, slowPolls(2*time.Hour))
	ctx := context.Background()

	// Listeners of this test's database only: brokers of other tests run beside it.
	dbName := dbNameOf(t, url)
	listening := func() bool { return wakeListeners(t, admin, dbName) == 2 }
	require.Eventually(t, listening, 10*time.Second, 10*time.Millisecond)

	got := parkPop(t, b, "xwake")
	_, err := a.Push(ctx, []queue.PushItem{{Queue: "xwake", TransactionID: "one", Payload: []byte(`1`)}})
	require.NoError(t, err)
	select {
	case res := <-got:
		require.Equal(t, []string{"one"}, txids(res.Messages))
	case <-time.After(30 * time.Second):
		t.Fatal("a push on replica A did not wake the long-poll parked on replica B")
	}

	t.Run("ListenerReconnectsAfterItsConnectionDies", func(t *testing.T) {
		_, err := admin.Exec(ctx, `SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
			WHERE `+store.WakeListenerLocks+` AND d.datname = $1`, dbName)
		require.NoError(t, err)
		require.Eventually(t, listening, 30*time.Second, 20*time.Millisecond, "both listeners are back")
		got := parkPop(t, b, "xwake")
		_, err = a.Push(ctx, []queue.PushItem{{Queue: "xwake", TransactionID: "two", Payload: []byte(`2`)}})
		require.NoError(t, err)
		select {
		case res := <-got:
			require.Equal(t, []string{"two"}, txids(res.Messages))
		case <-time.After(30 * time.Second):
			t.Fatal("no wake-up after the listener reconnected")
		}
	})
}

// An ack on replica A that ends a lease with messages left wakes a pop parked on
// replica B, which found the partition leased: no push will wake it for them.
// notifyingPair starts replicas a (configured by aOpt) and b (by bOpt) on a new
// database whose URL it returns, and waits until a sends its wake-ups: a learns
// within wakeListenersRecheck that b listens, so it pushes to queue "probe" until it
// has sent a notification.
func notifyingPair(t *testing.T, aOpt, bOpt func(*broker.Config)) (url string, a, b *broker.Broker) {
	t.Helper()
	url = pgtest.NewDBURL(t)
	admin := pgtest.NewDB(t)
	dbName := dbNameOf(t, url)
	a, b = replica(t, url, aOpt), replica(t, url, bOpt)
	require.Eventually(t, func() bool { return wakeListeners(t, admin, dbName) == 2 }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		_, err := a.Push(context.Background(), []queue.PushItem{{Queue: "probe", Payload: []byte(`0`)}})
		require.NoError(t, err)
		return a.WakeNotifications().Sent > 0
	}, 30*time.Second, 50*time.Millisecond, "replica a never sent a wake-up")
	return url, a, b
}

func TestAnAckOnOneReplicaWakesALongPollOnAnother(t *testing.T) {
	t.Parallel()
	// Only a notification can wake b's pops.
	_, a, b := notifyingPair(t, func(*broker.Config) {}, slowPolls(2*time.Hour))
	ctx := context.Background()

	_, err := a.Push(ctx, []queue.PushItem{{Queue: "xack", Partition: "a", TransactionID: "one", Payload: []byte(`1`)},
		{Queue: "xack", Partition: "a", TransactionID: "two", Payload: []byte(`2`)}})
	require.NoError(t, err)
	req := queue.PopRequest{Queue: "xack", Batch: 1}
	require.NoError(t, a.NormalizePop(&req))
	held, err := a.Pop(ctx, req)
	require.NoError(t, err)
	require.Equal(t, []string{"one"}, txids(held.Messages))

	got := parkPop(t, b, "xack") // partition a is leased: it parks
	acks, err := a.Ack(ctx, queue.Scope{}, "", []queue.Ack{{TransactionID: "one",
		PartitionID: held.Messages[0].PartitionID, LeaseID: held.LeaseID, Status: queue.AckCompleted}})
	require.NoError(t, err)
	require.True(t, acks[0].Success)
	select {
	case res := <-got:
		require.Equal(t, []string{"two"}, txids(res.Messages))
	case <-time.After(30 * time.Second):
		t.Fatal("the ack on replica A did not wake the long-poll parked on replica B")
	}
}

// dbNameOf returns the name of the database url points at.
func dbNameOf(t *testing.T, url string) string {
	t.Helper()
	u, err := url2.Parse(url)
	require.NoError(t, err)
	return strings.TrimPrefix(u.Path, "/")
}

// wakeListeners counts the replicas listening for wake-ups on database dbName.
func wakeListeners(t *testing.T, admin *pgxpool.Pool, dbName string) int {
	var n int
	err := admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
		WHERE `+store.WakeListenerLocks+` AND d.datname = $1`, dbName).Scan(&n)
	require.NoError(t, err)
	return n
}

// A replica alone on its database sends no NOTIFY (its commit would flush the WAL and
// take a database-wide lock for nobody); once another replica listens, it does, and
// the other's parked pops wake.
func TestAReplicaAloneSendsNoWakeups(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDBURL(t)
	admin := pgtest.NewDB(t)
	dbName := dbNameOf(t, url)
	ctx := context.Background()

	a := replica(t, url)
	require.Eventually(t, func() bool { return wakeListeners(t, admin, dbName) == 1 }, 10*time.Second, 10*time.Millisecond)
	for i := range 5 {
		_, err := a.Push(ctx, []queue.PushItem{{Queue: "xalone", Payload: []byte(strconv.Itoa(i))}})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return a.WakeNotifications().Skipped > 0 }, 10*time.Second, 5*time.Millisecond,
		"the sender skipped the wake-ups of a replica alone")
	require.Zero(t, a.WakeNotifications().Sent, "NOTIFYs sent with no other replica listening")

	b := replica(t, url, slowPolls(2*time.Hour)) // only a notification can wake its pops
	require.Eventually(t, func() bool { return wakeListeners(t, admin, dbName) == 2 }, 10*time.Second, 10*time.Millisecond)
	// Within wakeListenersRecheck, replica A learns that B listens; push until it does.
	// A pop counts as parked before its first attempt, which can find the first push
	// itself (no wake-up needed): then park another and push again.
	i := 0
	for round := 0; round < 3 && a.WakeNotifications().Sent == 0; round++ {
		got := parkPop(t, b, "xalone2")
		require.Eventually(t, func() bool {
			i++
			_, err := a.Push(ctx, []queue.PushItem{{Queue: "xalone2", Payload: []byte(strconv.Itoa(i))}})
			require.NoError(t, err)
			select {
			case res := <-got:
				require.Len(t, res.Messages, 1)
				return true
			default:
				return false
			}
		}, 30*time.Second, 50*time.Millisecond, "a push on A woke the long-poll parked on B")
	}
	require.Positive(t, a.WakeNotifications().Sent)
}
