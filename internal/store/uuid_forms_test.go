package store_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// TestCanonicalUUIDReadsWhatPostgreSQLReads holds queue.CanonicalUUID to PostgreSQL's
// own uuid input: the same strings accepted, each to the same canonical text.
func TestCanonicalUUIDReadsWhatPostgreSQLReads(t *testing.T) {
	t.Parallel()
	_, pool := openStore(t, 2)
	const id = "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"
	bare := strings.ReplaceAll(id, "-", "")
	inputs := []string{
		id, strings.ToLower(id), bare, "{" + id + "}", "{" + bare + "}",
		"a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11", "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}",
		"", "-", "{}", "{" + id, id + "}", "-" + bare, bare + "-", "a0eebc99--9c0b4ef8bb6d6bb9bd380a11",
		"a0eebc9-99c0b4ef8bb6d6bb9bd380a11", bare[:31], bare + "0", "g" + bare[1:], " " + bare,
		"{{" + bare + "}}", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1-1",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		// Random hex digits, with a hyphen, a brace or a stray character here and there.
		var b strings.Builder
		n := 32
		if rng.IntN(4) == 0 {
			n += 2*rng.IntN(2) - 1
		}
		for j := range n {
			switch {
			case j > 0 && j%4 == 0 && rng.IntN(3) == 0:
				b.WriteByte('-')
			case j > 0 && rng.IntN(40) == 0:
				b.WriteByte("--x{}"[rng.IntN(5)])
			}
			b.WriteByte("0123456789abcdefABCDEF"[rng.IntN(22)])
		}
		s := b.String()
		if rng.IntN(4) == 0 {
			s = "{" + s + "}"
		}
		inputs = append(inputs, s)
	}
	accepted := 0
	for _, in := range inputs {
		var want string
		err := pool.QueryRow(context.Background(), `SELECT $1::text::uuid::text`, in).Scan(&want)
		got, ok := queue.CanonicalUUID(in)
		if err != nil {
			var pgErr *pgconn.PgError
			require.ErrorAs(t, err, &pgErr, "%q", in)
			require.Equal(t, "22P02", pgErr.Code, "%q", in)
			require.False(t, ok, "%q: PostgreSQL refuses it, CanonicalUUID took it as %s", in, got)
			continue
		}
		accepted++
		require.True(t, ok, "%q: PostgreSQL reads it as %s", in, want)
		require.Equal(t, want, got, "%q", in)
	}
	require.Greater(t, accepted, 100, "the random forms include accepted ones")
}
