package auth

import (
	"crypto"
	"slices"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

// algToken signs an admin token of alg with the test key of its family (A keys), or
// with another key of the same family when wrong is set (B keys; a wrong secret for
// HMAC).
func algToken(t *testing.T, alg, kid string, wrong bool) string {
	t.Helper()
	method := jwt.GetSigningMethod(alg)
	require.NotNil(t, method, alg)
	var key any
	switch {
	case isHMAC(alg) && wrong:
		key = []byte("another-secret-another-secret-another")
	case isHMAC(alg):
		key = []byte(testSecret)
	case slices.Contains(rsaAlgorithms, alg):
		key = pick(wrong, rsaKeyA(), rsaKeyB())
	case alg == AlgES256:
		key = pick(wrong, ecKeyA(), ecKeyB())
	case alg == AlgEdDSA:
		key = pick(wrong, crypto.Signer(edKeyA()), crypto.Signer(edKeyB()))
	}
	return sign(t, method, key, kid, claims("admin"))
}

func pick[T any](second bool, a, b T) T {
	if second {
		return b
	}
	return a
}

// TestEveryAlgorithm signs a real token of every algorithm queen knows (HMAC with the
// secret, RSA, ECDSA P-256 and Ed25519 keys) and checks that each JWT_ALGORITHM value
// accepts exactly its set: HS*, RS384, RS512, ES256 and EdDSA themselves, RS256 the
// three RSA algorithms, auto all of them. Tokens outside the set are 401 "Unsupported
// token algorithm"; inside it, a token signed by another key is a bad signature.
func TestEveryAlgorithm(t *testing.T) {
	t.Parallel()
	all := []string{AlgHS256, AlgHS384, AlgHS512, AlgRS256, AlgRS384, AlgRS512, AlgES256, AlgEdDSA}
	want := map[string][]string{
		AlgHS256: {AlgHS256}, AlgHS384: {AlgHS384}, AlgHS512: {AlgHS512},
		AlgRS256: {AlgRS256, AlgRS384, AlgRS512}, AlgRS384: {AlgRS384}, AlgRS512: {AlgRS512},
		AlgES256: {AlgES256}, AlgEdDSA: {AlgEdDSA}, AlgAuto: all,
	}
	require.ElementsMatch(t, Algorithms(), slices.Collect(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	}), "every JWT_ALGORITHM value has its expected set")

	// keyed returns the key settings a JWT_ALGORITHM value needs, by public key.
	keyed := func(setting string) []Config {
		rsaPEM := publicPEM(t, rsaKeyA().Public())
		switch {
		case setting == AlgAuto:
			// auto narrows to the configured keys: one verifier per key type, the
			// secret in each.
			return []Config{
				{Secret: testSecret, PublicKeyPEM: rsaPEM},
				{Secret: testSecret, PublicKeyPEM: publicPEM(t, ecKeyA().Public())},
				{Secret: testSecret, PublicKeyPEM: publicPEM(t, edKeyA().Public())},
			}
		case isHMAC(setting):
			return []Config{{Secret: testSecret}}
		case setting == AlgES256:
			return []Config{{PublicKeyPEM: publicPEM(t, ecKeyA().Public())}}
		case setting == AlgEdDSA:
			return []Config{{PublicKeyPEM: publicPEM(t, edKeyA().Public())}}
		}
		return []Config{{PublicKeyPEM: rsaPEM}}
	}
	for setting, accepted := range want {
		t.Run(setting, func(t *testing.T) {
			t.Parallel()
			served := map[string]bool{}
			for _, cfg := range keyed(setting) {
				cfg.Algorithm = setting
				v := newTestVerifier(t, cfg)
				for _, alg := range all {
					_, err := v.Verify(t.Context(), algToken(t, alg, "", false))
					if !slices.Contains(v.Accepted(), alg) {
						requireRefused(t, err, ErrUnauthenticated, MsgUnsupportedAlg)
						continue
					}
					require.NoError(t, err, "%s token under JWT_ALGORITHM=%s", alg, setting)
					served[alg] = true
					_, err = v.Verify(t.Context(), algToken(t, alg, "", true))
					requireRefused(t, err, ErrUnauthenticated, MsgBadSignature)
				}
			}
			got := make([]string, 0, len(served))
			for alg := range served {
				got = append(got, alg)
			}
			require.ElementsMatch(t, accepted, got)
		})
	}
}

// TestEveryAlgorithmFromJWKS: with keys from a JWKS (RSA, EC P-256 and Ed25519, no
// alg members), auto verifies RS256/RS384/RS512, ES256 and EdDSA tokens by kid, and
// refuses the HMAC ones (no secret) and a kid of another key type.
func TestEveryAlgorithmFromJWKS(t *testing.T) {
	t.Parallel()
	rsaJWK := jwkOf(t, "rsa-1", rsaKeyA())
	delete(rsaJWK, "alg") // serves every RSA algorithm
	srv := newJWKSServer(t, rsaJWK, jwkOf(t, "ec-1", ecKeyA()), jwkOf(t, "ed-1", edKeyA()))
	v := jwksVerifier(t, srv, newClock(t0))
	kidOf := map[string]string{AlgRS256: "rsa-1", AlgRS384: "rsa-1", AlgRS512: "rsa-1", AlgES256: "ec-1", AlgEdDSA: "ed-1"}
	for alg, kid := range kidOf {
		_, err := v.Verify(t.Context(), algToken(t, alg, kid, false))
		require.NoError(t, err, alg)
		_, err = v.Verify(t.Context(), algToken(t, alg, "", false))
		require.NoError(t, err, "%s without a kid: any key of its type", alg)
		_, err = v.Verify(t.Context(), algToken(t, alg, kid, true))
		requireRefused(t, err, ErrUnauthenticated, MsgBadSignature)
	}
	_, err := v.Verify(t.Context(), algToken(t, AlgES256, "rsa-1", false))
	requireRefused(t, err, ErrUnauthenticated, MsgKeyAlgorithmMismatch)
	_, err = v.Verify(t.Context(), algToken(t, AlgHS384, "", false))
	requireRefused(t, err, ErrUnauthenticated, MsgUnsupportedAlg)

	t.Run("AlgMemberPinsOneAlgorithm", func(t *testing.T) {
		t.Parallel()
		pinned := jwkOf(t, "rsa-256", rsaKeyA()) // alg RS256
		v := jwksVerifier(t, newJWKSServer(t, pinned), newClock(t0))
		_, err := v.Verify(t.Context(), algToken(t, AlgRS256, "rsa-256", false))
		require.NoError(t, err)
		_, err = v.Verify(t.Context(), algToken(t, AlgRS512, "rsa-256", false))
		requireRefused(t, err, ErrUnauthenticated, MsgKeyAlgorithmMismatch)
	})
}
