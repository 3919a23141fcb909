package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/cli"
)

// TestUnauthorized runs queenctl against a broker that requires a JWT (HS256): no
// token and a bad token exit 4 naming the 401, a read-only token exits 4 on an admin
// route (403), a good token works, and /health needs none.
func TestUnauthorized(t *testing.T) {
	t.Parallel()
	const secret = "queenctl-test-secret-0123456789abcdef"
	b := startBroker(t, "JWT_ENABLED=true", "JWT_ALGORITHM=HS256", "JWT_SECRET="+secret)

	t.Run("NoToken", func(t *testing.T) {
		t.Parallel()
		r := b.run(t, "queue", "list")
		fails(t, r, cli.ExitAuth, "queenctl queue list: list queues: ", "(HTTP 401 from GET /api/v1/resources/queues)",
			"the broker requires a token: give one with --token, QUEEN_TOKEN or a context")
		require.Empty(t, r.stdout)
	})
	t.Run("BadToken", func(t *testing.T) {
		t.Parallel()
		r := runQueenctl(t, []string{"QUEEN_SERVER=" + b.url, "QUEEN_TOKEN=" + hs256(t, "wrong-secret", "admin")}, "", "queue", "list")
		fails(t, r, cli.ExitAuth, "HTTP 401", "the token from QUEEN_TOKEN was refused")
	})
	t.Run("ReadOnlyTokenCannotDelete", func(t *testing.T) {
		t.Parallel()
		r := b.run(t, "queue", "delete", "q", "--yes", "--token", hs256(t, secret, "read-only"))
		fails(t, r, cli.ExitAuth, "HTTP 403", "the token's role does not allow this")
	})
	t.Run("ValidToken", func(t *testing.T) {
		t.Parallel()
		tok := hs256(t, secret, "admin")
		ok(t, b.run(t, "push", "auth.q", "1", "--token", tok))
		ok(t, runQueenctl(t, []string{"QUEEN_SERVER=" + b.url, "QUEEN_TOKEN=" + tok}, "", "queue", "get", "auth.q"))
		ok(t, b.run(t, "ping")) // /health needs no token
	})
}

// hs256 mints an HS256 token with the given role, valid for an hour.
func hs256(t *testing.T, secret, role string) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	now := time.Now().Unix()
	unsigned := enc(map[string]string{"alg": "HS256", "typ": "JWT"}) + "." +
		enc(map[string]any{"sub": "queenctl-test", "username": "queenctl-test", "role": role, "iat": now, "exp": now + 3600})
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(unsigned))
	return unsigned + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}
