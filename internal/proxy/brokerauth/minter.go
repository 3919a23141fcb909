package brokerauth

import (
	"crypto"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"sync"
	"time"
)

// reuseMargin is how long before its expiry a minted token is replaced.
const reuseMargin = 60 * time.Second

// Claims name what a token is minted for.
type Claims struct {
	// Subject becomes the broker's producerSub: "<tenant>/<key id>", "queen-proxy", …
	Subject string
	// Role is the broker role value (read-only, read-write, admin or overrides).
	Role string
	// Tenant is the queen_tenant claim; "" for operators and the proxy itself.
	Tenant string
}

// Minter mints and caches broker tokens. It is safe for concurrent use.
type Minter struct {
	key      any
	alg, kid string
	issuer   string
	audience string
	ttl      time.Duration
	now      func() time.Time

	mu    sync.Mutex
	cache map[Claims]minted
}

type minted struct {
	token string
	exp   time.Time
}

// New returns a minter for key: ed25519.PrivateKey, *rsa.PrivateKey or []byte (HS256).
func New(key any, issuer, audience string, ttl time.Duration, now func() time.Time) (*Minter, error) {
	m := &Minter{key: key, issuer: issuer, audience: audience, ttl: ttl, now: now, cache: map[Claims]minted{}}
	switch k := key.(type) {
	case ed25519.PrivateKey:
		m.alg = "EdDSA"
		m.kid = thumbprint(fmt.Sprintf(`{"crv":"Ed25519","kty":"OKP","x":%q}`, b64(k.Public().(ed25519.PublicKey))))
	case *rsa.PrivateKey:
		m.alg = "RS256"
		m.kid = thumbprint(fmt.Sprintf(`{"e":%q,"kty":"RSA","n":%q}`, b64(big.NewInt(int64(k.E)).Bytes()), b64(k.N.Bytes())))
	case []byte:
		m.alg = "HS256"
	default:
		return nil, fmt.Errorf("brokerauth: unsupported key type %T", key)
	}
	return m, nil
}

// Token returns a valid token for c, minting one when the cached one is within a
// minute of its expiry.
func (m *Minter) Token(c Claims) (string, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.cache[c]; ok && now.Add(reuseMargin).Before(t.exp) {
		return t.token, nil
	}
	exp := now.Add(m.ttl)
	tok, err := m.sign(c, now, exp)
	if err != nil {
		return "", err
	}
	if len(m.cache) > 10_000 {
		clear(m.cache) // bounded: principals come and go
	}
	m.cache[c] = minted{token: tok, exp: exp}
	return tok, nil
}

func (m *Minter) sign(c Claims, now, exp time.Time) (string, error) {
	header := map[string]string{"alg": m.alg, "typ": "JWT"}
	if m.kid != "" {
		header["kid"] = m.kid
	}
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	claims := map[string]any{
		"iss": m.issuer, "aud": m.audience, "sub": c.Subject, "role": c.Role,
		"iat": now.Unix(), "exp": exp.Unix(), "jti": hex.EncodeToString(jti),
	}
	if c.Tenant != "" {
		claims["queen_tenant"] = c.Tenant
	}
	h, _ := json.Marshal(header)
	p, _ := json.Marshal(claims)
	input := b64(h) + "." + b64(p)
	var sig []byte
	var err error
	switch k := m.key.(type) {
	case ed25519.PrivateKey:
		sig = ed25519.Sign(k, []byte(input))
	case *rsa.PrivateKey:
		sum := sha256.Sum256([]byte(input))
		sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
	case []byte:
		mac := hmac.New(sha256.New, k)
		mac.Write([]byte(input))
		sig = mac.Sum(nil)
	}
	if err != nil {
		return "", fmt.Errorf("brokerauth: sign: %w", err)
	}
	return input + "." + b64(sig), nil
}

// JWKS is the public key set: {"keys":[]} for HS256.
func (m *Minter) JWKS() []byte {
	var keys []map[string]string
	switch k := m.key.(type) {
	case ed25519.PrivateKey:
		keys = append(keys, map[string]string{"kty": "OKP", "crv": "Ed25519", "x": b64(k.Public().(ed25519.PublicKey)),
			"kid": m.kid, "alg": "EdDSA", "use": "sig"})
	case *rsa.PrivateKey:
		keys = append(keys, map[string]string{"kty": "RSA", "n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes()),
			"kid": m.kid, "alg": "RS256", "use": "sig"})
	}
	if keys == nil {
		keys = []map[string]string{}
	}
	out, _ := json.Marshal(map[string]any{"keys": keys})
	return out
}

// thumbprint is the RFC 7638 thumbprint of a JWK's required members, given in
// lexical order without whitespace.
func thumbprint(canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return b64(sum[:])
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
