package session

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Audience is the aud claim of every session token: the proxy's own, which no
// broker is configured to accept.
const Audience = "queen-proxy"

// ErrInvalid is a token that is malformed, wrongly signed, for another audience or
// expired.
var ErrInvalid = errors.New("invalid session token")

// Claims are what a session token says. The proxy trusts them only together with
// the session row named by ID (jti), which logout deletes.
type Claims struct {
	// ID is the jti: the sessions table's key.
	ID string `json:"jti"`
	// Subject is the username.
	Subject string `json:"sub"`
	// Role is the user's role (qp_role): admin, read-write or read-only.
	Role string `json:"qp_role"`
	// Tenant is the user's tenant (qp_tenant); "" for an operator.
	Tenant    string `json:"qp_tenant,omitempty"`
	Audience  string `json:"aud"`
	IssuedAt  int64  `json:"iat"`
	ExpiresAt int64  `json:"exp"`
}

// Signer signs and verifies session tokens with one HS256 key.
type Signer struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

// NewSigner returns a signer whose tokens live ttl.
func NewSigner(key []byte, ttl time.Duration, now func() time.Time) *Signer {
	return &Signer{key: key, ttl: ttl, now: now}
}

// TTL is how long a new session lives.
func (s *Signer) TTL() time.Duration { return s.ttl }

// NewID returns a fresh random session id (jti).
func NewID() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Sign returns the token of a new session for the user: c.ID must be set; the
// audience, issue and expiry times are filled in. It returns the claims signed.
func (s *Signer) Sign(c Claims) (string, Claims) {
	now := s.now()
	c.Audience, c.IssuedAt, c.ExpiresAt = Audience, now.Unix(), now.Add(s.ttl).Unix()
	header := b64([]byte(`{"alg":"HS256","typ":"JWT"}`))
	payload, _ := json.Marshal(c)
	input := header + "." + b64(payload)
	return input + "." + b64(s.mac(input)), c
}

// Verify checks a token's signature, audience and expiry and returns its claims.
func (s *Signer) Verify(token string) (Claims, error) {
	var c Claims
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return c, ErrInvalid
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, s.mac(parts[0]+"."+parts[1])) {
		return c, ErrInvalid
	}
	var header struct {
		Alg string `json:"alg"`
	}
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || json.Unmarshal(hb, &header) != nil || header.Alg != "HS256" {
		return c, ErrInvalid
	}
	pb, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(pb, &c) != nil {
		return c, ErrInvalid
	}
	if c.Audience != Audience || c.ID == "" || c.Subject == "" || s.now().Unix() >= c.ExpiresAt {
		return Claims{}, ErrInvalid
	}
	return c, nil
}

// LooksLikeToken reports a three-part JWT shape, to tell a session token from
// other bearer values without verifying it.
func LooksLikeToken(s string) bool { return strings.Count(s, ".") == 2 }

func (s *Signer) mac(input string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(input))
	return m.Sum(nil)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
