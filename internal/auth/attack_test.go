package auth

import (
	"crypto/x509"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

// The known attacks on JWT verification, each a named test. Every refusal must be a
// 401 kind with a fixed message that quotes nothing from the token.

func TestAttackAlgNone(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Algorithm: "HS256", Secret: testSecret},
		{Algorithm: "auto", Secret: testSecret, PublicKeyPEM: publicPEM(t, rsaKeyA().Public())},
	} {
		v := newTestVerifier(t, cfg)
		unsecured, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims("admin")).SignedString(jwt.UnsafeAllowNoneSignatureType)
		require.NoError(t, err)
		for name, token := range map[string]string{
			"LibraryNone":       unsecured,
			"NoneWithSignature": rawToken(t, map[string]any{"alg": "none", "typ": "JWT"}, claims("admin"), "c2ln"),
			"UppercaseNONE":     rawToken(t, map[string]any{"alg": "NONE"}, claims("admin"), ""),
			"MixedCaseNone":     rawToken(t, map[string]any{"alg": "nOnE"}, claims("admin"), ""),
			"EmptyAlg":          rawToken(t, map[string]any{"alg": ""}, claims("admin"), ""),
			"MissingAlg":        rawToken(t, map[string]any{"typ": "JWT"}, claims("admin"), ""),
			"HS256WithEmptySig": rawToken(t, map[string]any{"alg": "HS256"}, claims("admin"), ""),
			"AlgNotAString":     rawToken(t, map[string]any{"alg": []string{"HS256"}}, claims("admin"), ""),
		} {
			_, err := v.Verify(t.Context(), token)
			require.ErrorIs(t, err, ErrUnauthenticated, "%s (%s)", name, cfg.Algorithm)
		}
		_, err = v.Verify(t.Context(), unsecured)
		requireRefused(t, err, ErrUnauthenticated, MsgUnsupportedAlg)
	}
}

// TestAttackAlgorithmConfusion: an HS256 token whose HMAC key is the broker's own RSA
// public key (the PEM text, or the DER bytes), the classic RS256→HS256 downgrade.
func TestAttackAlgorithmConfusion(t *testing.T) {
	t.Parallel()
	pubPEM := publicPEM(t, rsaKeyA().Public())
	der, err := x509.MarshalPKIXPublicKey(rsaKeyA().Public())
	require.NoError(t, err)
	forged := []string{
		sign(t, jwt.SigningMethodHS256, []byte(pubPEM), "", claims("admin")),
		sign(t, jwt.SigningMethodHS256, []byte(strings.TrimSpace(pubPEM)), "", claims("admin")),
		sign(t, jwt.SigningMethodHS256, der, "", claims("admin")),
	}

	t.Run("RS256Mode", func(t *testing.T) {
		t.Parallel()
		v := newTestVerifier(t, Config{Algorithm: "RS256", PublicKeyPEM: pubPEM})
		for _, tok := range forged {
			_, err := v.Verify(t.Context(), tok)
			requireRefused(t, err, ErrUnauthenticated, MsgUnsupportedAlg)
		}
	})

	t.Run("AutoModeWithASecretToo", func(t *testing.T) {
		t.Parallel()
		// HS256 is accepted here, but only ever checked against JWT_SECRET.
		v := newTestVerifier(t, Config{Algorithm: "auto", Secret: testSecret, PublicKeyPEM: pubPEM})
		for _, tok := range forged {
			_, err := v.Verify(t.Context(), tok)
			requireRefused(t, err, ErrUnauthenticated, MsgBadSignature)
		}
	})

	t.Run("AutoModeWithJWKS", func(t *testing.T) {
		t.Parallel()
		srv := newJWKSServer(t, jwkOf(t, "rsa-1", rsaKeyA()))
		v := jwksVerifier(t, srv, newClock(t0))
		for _, tok := range forged {
			_, err := v.Verify(t.Context(), tok)
			requireRefused(t, err, ErrUnauthenticated, MsgUnsupportedAlg)
		}
		// Also with the kid of the RSA key in the header.
		_, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodHS256, []byte(pubPEM), "rsa-1", claims("admin")))
		requireRefused(t, err, ErrUnauthenticated, MsgUnsupportedAlg)
	})
}

func TestAttackWrongAudience(t *testing.T) {
	t.Parallel()
	v := newTestVerifier(t, Config{Algorithm: "RS256", PublicKeyPEM: publicPEM(t, rsaKeyA().Public()), Audience: "queen"})
	for _, aud := range []any{"queen-staging", []string{"billing", "crm"}, "QUEEN", "", nil} {
		_, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, rsaKeyA(), "", claims("admin", "aud", aud)))
		requireRefused(t, err, ErrUnauthenticated, MsgBadAudience)
	}
}

func TestAttackWrongIssuer(t *testing.T) {
	t.Parallel()
	v := newTestVerifier(t, Config{Algorithm: "EdDSA", PublicKeyPEM: publicPEM(t, edKeyA().Public()), Issuer: "https://idp.example"})
	for _, iss := range []any{"https://idp.example.evil", "https://idp.example/", "", 42, nil} {
		_, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodEdDSA, edKeyA(), "", claims("admin", "iss", iss)))
		requireRefused(t, err, ErrUnauthenticated, MsgBadIssuer)
	}
}

func TestAttackUnknownKid(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, jwkOf(t, "rsa-1", rsaKeyA()))
	v := jwksVerifier(t, srv, newClock(t0))
	// Signed by the attacker's own key under a kid the JWKS does not publish.
	_, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, rsaKeyB(), "attacker-key", claims("admin")))
	requireRefused(t, err, ErrUnauthenticated, MsgUnknownKeyID)
	// Signed by the attacker under the published kid: the published key decides.
	_, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, rsaKeyB(), "rsa-1", claims("admin")))
	requireRefused(t, err, ErrUnauthenticated, MsgBadSignature)
	require.EqualValues(t, 1, srv.fetches.Load(), "the second unknown-kid lookup is rate-limited")
}

// TestAttackKidOfAnotherKeyType: an EdDSA token naming the kid of an RSA key (and the
// reverse) is refused without trying the key.
func TestAttackKidOfAnotherKeyType(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, jwkOf(t, "rsa-1", rsaKeyA()), jwkOf(t, "ed-1", edKeyA()))
	v := jwksVerifier(t, srv, newClock(t0))
	_, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodEdDSA, edKeyB(), "rsa-1", claims("admin")))
	requireRefused(t, err, ErrUnauthenticated, MsgKeyAlgorithmMismatch)
	_, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, rsaKeyB(), "ed-1", claims("admin")))
	requireRefused(t, err, ErrUnauthenticated, MsgKeyAlgorithmMismatch)
}

// TestAttackSymmetricKeyInJWKS: an "oct" key in the JWKS never becomes an HS256 key.
func TestAttackSymmetricKeyInJWKS(t *testing.T) {
	t.Parallel()
	secret := []byte("published-by-mistake-published-by-mistake")
	oct := map[string]any{"kty": "oct", "kid": "hmac", "alg": "HS256", "k": base64.RawURLEncoding.EncodeToString(secret)}
	srv := newJWKSServer(t, oct, jwkOf(t, "rsa-1", rsaKeyA()))
	v := jwksVerifier(t, srv, newClock(t0))
	_, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodHS256, secret, "hmac", claims("admin")))
	requireRefused(t, err, ErrUnauthenticated, MsgUnsupportedAlg)
}

// TestAttackEmbeddedKeyHeaders: keys offered by the token itself (jwk, jku, x5u) are
// never used.
func TestAttackEmbeddedKeyHeaders(t *testing.T) {
	t.Parallel()
	v := newTestVerifier(t, Config{Algorithm: "RS256", PublicKeyPEM: publicPEM(t, rsaKeyA().Public())})
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims("admin"))
	tok.Header["jwk"] = jwkOf(t, "mine", rsaKeyB())
	tok.Header["jku"] = "https://attacker.example/jwks.json"
	tok.Header["x5u"] = "https://attacker.example/cert.pem"
	s, err := tok.SignedString(rsaKeyB())
	require.NoError(t, err)
	_, err = v.Verify(t.Context(), s)
	requireRefused(t, err, ErrUnauthenticated, MsgBadSignature)
}

func TestAttackExpiredTokenReplay(t *testing.T) {
	t.Parallel()
	v := newTestVerifier(t, Config{Algorithm: "HS256", Secret: testSecret, ClockSkew: 30 * time.Second})
	_, err := v.Verify(t.Context(), hs256(t, claims("admin", "exp", t0.Add(-time.Minute).Unix())))
	requireRefused(t, err, ErrUnauthenticated, MsgExpired)
}

// TestAttackRefusalsEchoNothing: no refusal message contains any part of the token or
// its claims, whatever the token carries.
func TestAttackRefusalsEchoNothing(t *testing.T) {
	t.Parallel()
	const marker = "ZZmarkerZZ"
	v := newTestVerifier(t, Config{Algorithm: "HS256", Secret: testSecret, Issuer: "iss", Audience: "aud"})
	for _, tok := range []string{
		rawToken(t, map[string]any{"alg": marker, "kid": marker}, claims(marker), marker),
		sign(t, jwt.SigningMethodHS256, []byte("wrong-wrong-wrong-wrong-wrong-wrong"), marker, claims(marker, "sub", marker)),
		hs256(t, claims(marker, "iss", marker, "aud", "aud")),
		hs256(t, claims(marker, "iss", "iss", "aud", marker)),
		hs256(t, claims(marker, "iss", "iss", "aud", "aud", "exp", marker)),
		marker + "." + marker,
	} {
		_, err := v.Verify(t.Context(), tok)
		require.ErrorIs(t, err, ErrUnauthenticated)
		require.NotContains(t, err.Error(), marker)
		require.NotContains(t, err.Error(), tok)
	}
}
