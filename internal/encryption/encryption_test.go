package encryption_test

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/encryption"
)

func testKey(t *testing.T) []byte {
	t.Helper()
	key, err := hex.DecodeString("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	require.NoError(t, err)
	return key
}

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	s, err := encryption.New(testKey(t))
	require.NoError(t, err)
	sealed, err := s.Seal([]byte(`{ "order": 42, "items": ["a", "b"] }`))
	require.NoError(t, err)

	var env map[string]string
	require.NoError(t, json.Unmarshal(sealed, &env))
	require.Len(t, env, 3)
	iv, err := base64.StdEncoding.DecodeString(env["iv"])
	require.NoError(t, err)
	require.Len(t, iv, 16, "upstream writes a 16-byte iv")
	tag, err := base64.StdEncoding.DecodeString(env["authTag"])
	require.NoError(t, err)
	require.Len(t, tag, 16)
	require.NotContains(t, string(sealed), "order")

	require.JSONEq(t, `{"order":42,"items":["a","b"]}`, string(s.Open(sealed)))
}

// TestOpenReadsUpstreamCiphertext builds an envelope the way upstream does (a 16-byte
// iv of which GCM uses the first 12 bytes) independently of Seal.
func TestOpenReadsUpstreamCiphertext(t *testing.T) {
	t.Parallel()
	key := testKey(t)
	block, err := aes.NewCipher(key)
	require.NoError(t, err)
	gcm, err := cipher.NewGCM(block)
	require.NoError(t, err)
	iv := []byte("0123456789abcdef")
	sealed := gcm.Seal(nil, iv[:12], []byte(`{"hello":"world"}`), nil)
	env, err := json.Marshal(map[string]string{
		"encrypted": base64.StdEncoding.EncodeToString(sealed[:len(sealed)-16]),
		"iv":        base64.StdEncoding.EncodeToString(iv),
		"authTag":   base64.StdEncoding.EncodeToString(sealed[len(sealed)-16:]),
	})
	require.NoError(t, err)

	s, err := encryption.New(key)
	require.NoError(t, err)
	require.JSONEq(t, `{"hello":"world"}`, string(s.Open(env)))
}

func TestOpenLeavesOtherPayloadsAlone(t *testing.T) {
	t.Parallel()
	s, err := encryption.New(testKey(t))
	require.NoError(t, err)
	other, err := encryption.New(make([]byte, 32))
	require.NoError(t, err)
	foreign, err := other.Seal([]byte(`{"x":1}`))
	require.NoError(t, err)
	for _, p := range []string{`{"x":1}`, `null`, `[1,2]`, `"encrypted iv authTag"`,
		`{"encrypted":"!!","iv":"AA==","authTag":"AA=="}`, string(foreign)} {
		require.Equal(t, p, string(s.Open([]byte(p))), "payload %s", p)
	}
}

func TestNewRejectsShortKeys(t *testing.T) {
	t.Parallel()
	_, err := encryption.New(make([]byte, 16))
	require.Error(t, err)
}
