package broker_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/encryption"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
)

// A replica caches a queue's encryption flag for QueueCacheTTL, and nothing tells it
// of a configure made through another replica. So once one replica turns
// encryptionEnabled on, another stores plaintext while the flag it read is younger
// than the TTL, and encrypts its pushes after that.
func TestEncryptionTurnedOnThroughOneReplicaAppliesOnAnotherWithinTheCacheTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sealer, err := encryption.New([]byte("0123456789abcdef0123456789abcdef"))
	require.NoError(t, err)
	withKey := func(c *broker.Config) { c.Sealer = sealer }
	url := pgtest.NewDBURL(t)
	a, b := replica(t, url, withKey), replica(t, url, withKey)
	db, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(db.Close)

	const q, secret = "xvault", "4111"
	push := func(txid string) {
		_, err := b.Push(ctx, []queue.PushItem{item(q, "", txid, `{"card":"`+secret+`"}`)})
		require.NoError(t, err)
	}
	// encrypted reports whether the message txid is stored encrypted, and checks that
	// its stored payload shows the secret exactly when it is not.
	encrypted := func(txid string) bool {
		var enc bool
		var payload string
		require.NoError(t, db.QueryRow(ctx, `SELECT is_encrypted IS TRUE, payload::text FROM queen.messages
			WHERE transaction_id = $1`, txid).Scan(&enc, &payload))
		require.Equal(t, !enc, strings.Contains(payload, secret), "is_encrypted %v with payload %s", enc, payload)
		return enc
	}

	_, _, err = a.Configure(ctx, queue.Queue{Name: q, Options: queue.DefaultOptions()})
	require.NoError(t, err)
	// B reads the flag (off) at or after warmed, so its entry lives at least until
	// warmed + QueueCacheTTL.
	warmed := time.Now()
	push("warm")
	require.False(t, encrypted("warm"))

	_, _, err = a.ConfigureEdit(ctx, queue.ConfigureEdit{Name: q,
		ApplyFunc: func(o *queue.Options) { o.EncryptionEnabled = true }, Keys: []string{"encryptionEnabled"}})
	require.NoError(t, err)
	push("stale")
	if time.Since(warmed) < broker.QueueCacheTTL {
		require.False(t, encrypted("stale"), "B pushed under the flag it read less than the TTL ago")
	}

	// 20 s is well above the TTL: a replica that never reads the flag again fails here.
	i := 0
	require.Eventually(t, func() bool {
		i++
		txid := "m" + strconv.Itoa(i)
		push(txid)
		return encrypted(txid)
	}, 20*time.Second, 100*time.Millisecond, "replica B still stores plaintext in a queue replica A made encrypted")
	require.GreaterOrEqual(t, time.Since(warmed), broker.QueueCacheTTL,
		"B encrypted before the flag it read (off) was as old as the TTL")
}
