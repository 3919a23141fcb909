package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/testlog"
)

// testSecret is the HS256 secret of the tests (32 bytes, so no weak-secret warning).
const testSecret = "0123456789abcdef0123456789abcdef"

// t0 is the fixed "now" of tests that pin time.
var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// Keys are generated once per test binary: RSA generation dominates the run time.
var (
	rsaKeyA = sync.OnceValue(func() *rsa.PrivateKey { return mustRSA(2048) })
	rsaKeyB = sync.OnceValue(func() *rsa.PrivateKey { return mustRSA(2048) })
	edKeyA  = sync.OnceValue(func() ed25519.PrivateKey { return mustEd25519() })
	edKeyB  = sync.OnceValue(func() ed25519.PrivateKey { return mustEd25519() })
	ecKeyA  = sync.OnceValue(func() *ecdsa.PrivateKey { return mustP256() })
	ecKeyB  = sync.OnceValue(func() *ecdsa.PrivateKey { return mustP256() })
)

func mustP256() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}

func mustRSA(bits int) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		panic(err)
	}
	return k
}

func mustEd25519() ed25519.PrivateKey {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}

// publicPEM renders the PKIX PEM of a public key.
func publicPEM(t *testing.T, pub any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// claims builds a claim set valid at t0 with the given role ("" for none); extra
// key/value pairs override.
func claims(role string, kv ...any) jwt.MapClaims {
	c := jwt.MapClaims{"sub": "alice", "username": "alice", "iat": t0.Unix(), "exp": t0.Add(time.Hour).Unix()}
	if role != "" {
		c["role"] = role
	}
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i].(string)
		if kv[i+1] == nil {
			delete(c, k)
			continue
		}
		c[k] = kv[i+1]
	}
	return c
}

// sign signs c with method and key, setting kid when not "".
func sign(t *testing.T, method jwt.SigningMethod, key any, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

func hs256(t *testing.T, c jwt.MapClaims) string {
	return sign(t, jwt.SigningMethodHS256, []byte(testSecret), "", c)
}

// rawToken assembles a token from a header, claims and a raw signature segment.
func rawToken(t *testing.T, header map[string]any, c jwt.MapClaims, sig string) string {
	t.Helper()
	h, err := json.Marshal(header)
	require.NoError(t, err)
	p, err := json.Marshal(c)
	require.NoError(t, err)
	enc := base64.RawURLEncoding.EncodeToString
	return enc(h) + "." + enc(p) + "." + sig
}

// clock is a settable time source.
type clock struct{ ns atomic.Int64 }

func newClock(at time.Time) *clock {
	c := &clock{}
	c.set(at)
	return c
}

func (c *clock) set(at time.Time)        { c.ns.Store(at.UnixNano()) }
func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// newTestVerifier builds a verifier at t0 (unless cfg sets NowFunc) logging to t.
func newTestVerifier(t *testing.T, cfg Config) *Verifier {
	t.Helper()
	if cfg.NowFunc == nil {
		cfg.NowFunc = func() time.Time { return t0 }
	}
	if cfg.Logger == nil {
		cfg.Logger = testlog.Logger(t)
	}
	v, err := NewVerifier(cfg)
	require.NoError(t, err)
	return v
}

// requireRefused asserts err is an *Error of kind with message msg.
func requireRefused(t *testing.T, err error, kind error, msg string) {
	t.Helper()
	require.ErrorIs(t, err, kind)
	var ae *Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, msg, ae.Message)
}

// jwkOf renders the public JWK of a private key.
func jwkOf(t *testing.T, kid string, priv any) map[string]any {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	switch k := priv.(type) {
	case *rsa.PrivateKey:
		return map[string]any{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
			"n": enc(k.N.Bytes()), "e": enc(big.NewInt(int64(k.E)).Bytes())}
	case ed25519.PrivateKey:
		return map[string]any{"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": enc(k.Public().(ed25519.PublicKey))}
	case *ecdsa.PrivateKey:
		pt, err := k.PublicKey.Bytes() // 0x04 || X || Y
		require.NoError(t, err)
		return map[string]any{"kty": "EC", "crv": "P-256", "kid": kid, "x": enc(pt[1:33]), "y": enc(pt[33:])}
	}
	t.Fatalf("jwkOf: %T", priv)
	return nil
}

// jwksServer serves a JWKS document that the test can replace, and counts fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	doc     []byte
	status  int
	fetches atomic.Int64
}

func newJWKSServer(t *testing.T, keys ...map[string]any) *jwksServer {
	t.Helper()
	s := &jwksServer{status: http.StatusOK}
	s.setKeys(t, keys...)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		doc, status := s.doc, s.status
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(doc)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) setKeys(t *testing.T, keys ...map[string]any) {
	t.Helper()
	doc, err := json.Marshal(map[string]any{"keys": keys})
	require.NoError(t, err)
	s.mu.Lock()
	s.doc, s.status = doc, http.StatusOK
	s.mu.Unlock()
}

func (s *jwksServer) fail(status int) {
	s.mu.Lock()
	s.status, s.doc = status, []byte(`{"error":"down"}`)
	s.mu.Unlock()
}

func mustECDSA(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return k
}

func mustJSONBytes(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
