package brokerauth_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/brokerauth"
	"github.com/queenmq/queen/internal/testclock"
)

const (
	issuer   = "queen-proxy-test"
	audience = "queen-broker-test"
	ttl      = 10 * time.Minute
)

type testBundle struct {
	clock  *testclock.Clock
	minter *brokerauth.Minter
}

func setup(t *testing.T, key any) *testBundle {
	t.Helper()
	c := testclock.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	m, err := brokerauth.New(key, issuer, audience, ttl, c.Now)
	require.NoError(t, err)
	return &testBundle{clock: c, minter: m}
}

// jwk is one member of the JWKS the minter publishes.
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	N   string `json:"n"`
	E   string `json:"e"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

func jwks(t *testing.T, m *brokerauth.Minter) []jwk {
	t.Helper()
	var set struct {
		Keys []jwk `json:"keys"`
	}
	require.NoError(t, json.Unmarshal(m.JWKS(), &set))
	require.NotNil(t, set.Keys, "keys must be an array, never null")
	return set.Keys
}

func unb64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	require.NoError(t, err)
	return b
}

// publicKey rebuilds the verification key from the JWKS alone, as a broker does.
func publicKey(t *testing.T, k jwk) any {
	t.Helper()
	switch k.Kty {
	case "OKP":
		require.Equal(t, "Ed25519", k.Crv)
		return ed25519.PublicKey(unb64(t, k.X))
	case "RSA":
		return &rsa.PublicKey{N: new(big.Int).SetBytes(unb64(t, k.N)), E: int(new(big.Int).SetBytes(unb64(t, k.E)).Int64())}
	}
	t.Fatalf("unexpected kty %q", k.Kty)
	return nil
}

// verify parses tok with golang-jwt at the minter's clock, accepting only alg and
// the verification key key, and returns its claims and header.
func verify(t *testing.T, tok, alg string, key any, at time.Time) (jwt.MapClaims, map[string]any) {
	t.Helper()
	claims := jwt.MapClaims{}
	parsed, err := jwt.ParseWithClaims(tok, claims, func(*jwt.Token) (any, error) { return key, nil },
		jwt.WithValidMethods([]string{alg}), jwt.WithIssuer(issuer), jwt.WithAudience(audience),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithTimeFunc(func() time.Time { return at }))
	require.NoError(t, err)
	require.True(t, parsed.Valid)
	return claims, parsed.Header
}

func TestMinterSignsVerifiableTokens(t *testing.T) {
	t.Parallel()

	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	hsKey := []byte("0123456789abcdef0123456789abcdef")

	for _, tc := range []struct {
		name   string
		key    any
		alg    string
		verify func(t *testing.T, m *brokerauth.Minter) any
	}{
		{"EdDSA", edKey, "EdDSA", func(t *testing.T, m *brokerauth.Minter) any {
			keys := jwks(t, m)
			require.Len(t, keys, 1)
			require.Equal(t, edKey.Public(), publicKey(t, keys[0]))
			return publicKey(t, keys[0])
		}},
		{"RS256", rsaKey, "RS256", func(t *testing.T, m *brokerauth.Minter) any {
			keys := jwks(t, m)
			require.Len(t, keys, 1)
			pub := publicKey(t, keys[0]).(*rsa.PublicKey)
			require.True(t, rsaKey.PublicKey.Equal(pub))
			return pub
		}},
		{"HS256", hsKey, "HS256", func(t *testing.T, m *brokerauth.Minter) any {
			require.Empty(t, jwks(t, m), "a shared secret is never published")
			require.JSONEq(t, `{"keys":[]}`, string(m.JWKS()))
			return hsKey
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.key)
			key := tc.verify(t, b.minter)
			now := b.clock.Now()

			tok, err := b.minter.Token(brokerauth.Claims{Subject: "acme/k1", Role: "read-write", Tenant: "acme"})
			require.NoError(t, err)
			claims, header := verify(t, tok, tc.alg, key, now)
			require.Equal(t, "acme/k1", claims["sub"])
			require.Equal(t, "read-write", claims["role"])
			require.Equal(t, "acme", claims["queen_tenant"])
			require.Equal(t, issuer, claims["iss"])
			require.Equal(t, audience, claims["aud"])
			require.InDelta(t, float64(now.Unix()), claims["iat"], 0)
			require.InDelta(t, float64(now.Add(ttl).Unix()), claims["exp"], 0)
			require.Regexp(t, `^[0-9a-f]{32}$`, claims["jti"])
			require.Equal(t, "JWT", header["typ"])
			if keys := jwks(t, b.minter); len(keys) > 0 {
				require.Equal(t, keys[0].Kid, header["kid"], "the header names the published key")
				require.Equal(t, tc.alg, keys[0].Alg)
				require.Equal(t, "sig", keys[0].Use)
			} else {
				require.NotContains(t, header, "kid")
			}

			// No tenant: no queen_tenant claim at all (an operator, the proxy itself).
			tok, err = b.minter.Token(brokerauth.Claims{Subject: "queen-proxy", Role: "admin"})
			require.NoError(t, err)
			claims, _ = verify(t, tok, tc.alg, key, now)
			require.NotContains(t, claims, "queen_tenant")
			require.Equal(t, "admin", claims["role"])

			// The token is refused by a verifier past its expiry.
			_, err = jwt.Parse(tok, func(*jwt.Token) (any, error) { return key, nil }, jwt.WithValidMethods([]string{tc.alg}),
				jwt.WithTimeFunc(func() time.Time { return now.Add(ttl + time.Second) }))
			require.ErrorIs(t, err, jwt.ErrTokenExpired)
		})
	}
}

func TestMinterReusesUntilAMinuteBeforeExpiry(t *testing.T) {
	t.Parallel()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	b := setup(t, key)
	start := b.clock.Now()
	c := brokerauth.Claims{Subject: "acme/k1", Role: "read-only", Tenant: "acme"}

	first, err := b.minter.Token(c)
	require.NoError(t, err)

	b.clock.Set(start.Add(ttl - 61*time.Second))
	again, err := b.minter.Token(c)
	require.NoError(t, err)
	require.Equal(t, first, again, "reused while more than a minute is left")

	other, err := b.minter.Token(brokerauth.Claims{Subject: "acme/k1", Role: "read-write", Tenant: "acme"})
	require.NoError(t, err)
	require.NotEqual(t, first, other, "another role is another token")

	b.clock.Set(start.Add(ttl - 59*time.Second))
	fresh, err := b.minter.Token(c)
	require.NoError(t, err)
	require.NotEqual(t, first, fresh, "replaced within a minute of its expiry")
	claims, _ := verify(t, fresh, "EdDSA", key.Public(), b.clock.Now())
	require.InDelta(t, float64(b.clock.Now().Add(ttl).Unix()), claims["exp"], 0)

	b.clock.Set(start.Add(ttl - 30*time.Second))
	cached, err := b.minter.Token(c)
	require.NoError(t, err)
	require.Equal(t, fresh, cached, "the replacement is the one reused")
}

func TestMinterIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	b := setup(t, []byte("0123456789abcdef0123456789abcdef"))
	c := brokerauth.Claims{Subject: "acme/k1", Role: "read-only", Tenant: "acme"}
	want, err := b.minter.Token(c)
	require.NoError(t, err)

	var wg sync.WaitGroup
	got := make([]string, 16)
	for i := range got {
		wg.Go(func() {
			got[i], _ = b.minter.Token(c)
		})
	}
	wg.Wait()
	for _, tok := range got {
		require.Equal(t, want, tok)
	}
}

// TestKeyIDIsTheRFC7638Thumbprint checks the kid against the published thumbprint of
// the Ed25519 key of RFC 8037, appendix A.
func TestKeyIDIsTheRFC7638Thumbprint(t *testing.T) {
	t.Parallel()
	seed, err := base64.RawURLEncoding.DecodeString("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A")
	require.NoError(t, err)
	b := setup(t, ed25519.NewKeyFromSeed(seed))
	keys := jwks(t, b.minter)
	require.Len(t, keys, 1)
	require.Equal(t, "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", keys[0].X)
	require.Equal(t, "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k", keys[0].Kid)
}

func TestNewRefusesAnUnsupportedKey(t *testing.T) {
	t.Parallel()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	for _, key := range []any{"a string", &rsaKey.PublicKey, nil} {
		m, err := brokerauth.New(key, issuer, audience, ttl, time.Now)
		require.Error(t, err, "%T", key)
		require.Nil(t, m)
	}
}
