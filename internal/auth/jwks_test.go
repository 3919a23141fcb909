package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/testwait"
)

// jwksVerifier builds an auto verifier on srv with a settable clock. It does not start
// Run unless the test does.
func jwksVerifier(t *testing.T, srv *jwksServer, clk *clock, mutate ...func(*Config)) *Verifier {
	t.Helper()
	cfg := Config{
		Algorithm: "auto", JWKSURL: srv.URL + "/.well-known/jwks.json", NowFunc: clk.now,
		JWKSMinRefetchInterval: 10 * time.Second, JWKSTimeout: 2 * time.Second,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	return newTestVerifier(t, cfg)
}

// runVerifier runs v.Run until the test ends.
func runVerifier(t *testing.T, v *Verifier) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	go func() { defer close(done); require.NoError(t, v.Run(ctx)) }()
	t.Cleanup(func() { cancel(); <-done })
}

func TestJWKSRotation(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, jwkOf(t, "rsa-1", rsaKeyA()), jwkOf(t, "ed-1", edKeyA()))
	clk := newClock(t0)
	v := jwksVerifier(t, srv, clk)
	verify := func(method jwt.SigningMethod, key any, kid string) error {
		_, err := v.Verify(t.Context(), sign(t, method, key, kid, claims("read-write")))
		return err
	}

	// The first token fetches the JWKS (nothing cached yet); both key types work.
	require.NoError(t, verify(jwt.SigningMethodRS256, rsaKeyA(), "rsa-1"))
	require.NoError(t, verify(jwt.SigningMethodEdDSA, edKeyA(), "ed-1"))
	require.NoError(t, verify(jwt.SigningMethodEdDSA, edKeyA(), ""), "a token without kid tries the keys of its type")
	require.EqualValues(t, 1, srv.fetches.Load())

	// The identity provider rotates mid-test: rsa-1 is retired, rsa-2 published.
	srv.setKeys(t, jwkOf(t, "rsa-2", rsaKeyB()), jwkOf(t, "ed-1", edKeyA()))
	clk.advance(11 * time.Second)

	// A token with the new kid triggers one re-fetch, and the new key verifies it.
	require.NoError(t, verify(jwt.SigningMethodRS256, rsaKeyB(), "rsa-2"))
	require.EqualValues(t, 2, srv.fetches.Load())

	// The fetch replaced the cache: the retired key no longer verifies anything, and
	// asking again within the rate-limit window does not fetch again.
	requireRefused(t, verify(jwt.SigningMethodRS256, rsaKeyA(), "rsa-1"), ErrUnauthenticated, MsgUnknownKeyID)
	requireRefused(t, verify(jwt.SigningMethodRS256, rsaKeyA(), ""), ErrUnauthenticated, MsgBadSignature)
	require.EqualValues(t, 2, srv.fetches.Load())
	require.NoError(t, verify(jwt.SigningMethodEdDSA, edKeyA(), "ed-1"))
}

func TestJWKSTimerRefresh(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, jwkOf(t, "ed-1", edKeyA()))
	clk := newClock(t0)
	// A huge rate-limit window: only the timer can pick up the rotation.
	v := jwksVerifier(t, srv, clk, func(c *Config) {
		c.JWKSRefreshInterval = 20 * time.Millisecond
		c.JWKSMinRefetchInterval = time.Hour
	})
	runVerifier(t, v)
	// The timer fires every 20 ms; the 30 s deadlines only turn a dead timer into a
	// failure.
	testwait.For(t, 30*time.Second, 5*time.Millisecond, func() error {
		if srv.fetches.Load() < 1 {
			return errors.New("no fetch yet")
		}
		return nil
	})
	_, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodEdDSA, edKeyA(), "ed-1", claims("admin")))
	require.NoError(t, err)

	srv.setKeys(t, jwkOf(t, "ed-2", edKeyB()))
	testwait.For(t, 30*time.Second, 10*time.Millisecond, func() error {
		_, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodEdDSA, edKeyB(), "ed-2", claims("admin")))
		return err
	})
	_, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodEdDSA, edKeyA(), "ed-1", claims("admin")))
	requireRefused(t, err, ErrUnauthenticated, MsgUnknownKeyID)
}

func TestJWKSFailures(t *testing.T) {
	t.Parallel()

	t.Run("UnreachableIsUnavailableNotUnauthenticated", func(t *testing.T) {
		t.Parallel()
		srv := newJWKSServer(t)
		srv.fail(http.StatusInternalServerError)
		v := jwksVerifier(t, srv, newClock(t0))
		_, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, rsaKeyA(), "rsa-1", claims("admin")))
		requireRefused(t, err, ErrKeysUnavailable, MsgKeysUnavailable)
	})

	t.Run("BackOneRetryAfterLater", func(t *testing.T) {
		t.Parallel()
		// The JWKS is down when the first token comes: 503, Retry-After: 1. Tokens
		// within that second reuse the failure; one a second later fetches again and,
		// the JWKS being back, is verified, though the 10 s limit of a successful
		// fetch has not passed.
		srv := newJWKSServer(t)
		srv.fail(http.StatusInternalServerError)
		clk := newClock(t0)
		v := jwksVerifier(t, srv, clk)
		token := sign(t, jwt.SigningMethodRS256, rsaKeyA(), "rsa-1", claims("admin"))
		for range 3 {
			_, err := v.Verify(t.Context(), token)
			requireRefused(t, err, ErrKeysUnavailable, MsgKeysUnavailable)
		}
		require.EqualValues(t, 1, srv.fetches.Load())
		srv.setKeys(t, jwkOf(t, "rsa-1", rsaKeyA()))
		clk.advance(500 * time.Millisecond)
		_, err := v.Verify(t.Context(), token)
		requireRefused(t, err, ErrKeysUnavailable, MsgKeysUnavailable)
		require.EqualValues(t, 1, srv.fetches.Load())
		clk.advance(time.Second)
		_, err = v.Verify(t.Context(), token)
		require.NoError(t, err)
		require.EqualValues(t, 2, srv.fetches.Load())

		// Once a fetch succeeded, an unknown kid waits the full 10 s again.
		clk.advance(time.Second)
		_, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, rsaKeyB(), "rsa-2", claims("admin")))
		requireRefused(t, err, ErrUnauthenticated, MsgUnknownKeyID)
		require.EqualValues(t, 2, srv.fetches.Load())
	})

	t.Run("FailedRefreshKeepsCachedKeys", func(t *testing.T) {
		t.Parallel()
		srv := newJWKSServer(t, jwkOf(t, "rsa-1", rsaKeyA()))
		clk := newClock(t0)
		v := jwksVerifier(t, srv, clk)
		require.NoError(t, v.jwks.refresh(t.Context(), "test"))
		srv.fail(http.StatusBadGateway)
		require.Error(t, v.jwks.refresh(t.Context(), "test"))
		_, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, rsaKeyA(), "rsa-1", claims("admin")))
		require.NoError(t, err)
	})

	t.Run("SlowServerTimesOut", func(t *testing.T) {
		t.Parallel()
		// The server never answers: only the fetch's own timeout can end the Verify,
		// and the server sees the fetch given up. The 30 s ceiling is 300 times the
		// timeout and only turns a hang into a failure.
		release, gaveUp := make(chan struct{}), make(chan struct{}, 1)
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
				gaveUp <- struct{}{}
			case <-release:
			}
		}))
		t.Cleanup(slow.Close)
		t.Cleanup(func() { close(release) }) // runs first: unblocks the handler, then Close
		v := newTestVerifier(t, Config{Algorithm: "RS256", JWKSURL: slow.URL, JWKSTimeout: 100 * time.Millisecond})
		token := sign(t, jwt.SigningMethodRS256, rsaKeyA(), "rsa-1", claims("admin"))
		verified := make(chan error, 1)
		go func() {
			_, err := v.Verify(context.Background(), token)
			verified <- err
		}()
		select {
		case err := <-verified:
			requireRefused(t, err, ErrKeysUnavailable, MsgKeysUnavailable)
		case <-time.After(30 * time.Second):
			t.Fatal("Verify did not return: the JWKS fetch has no timeout")
		}
		select {
		case <-gaveUp:
		case <-time.After(30 * time.Second):
			t.Fatal("the JWKS server never saw the fetch given up")
		}
	})
}

func TestParseJWKS(t *testing.T) {
	t.Parallel()
	rsa := jwkOf(t, "rsa", rsaKeyA())
	ed := jwkOf(t, "ed", edKeyA())
	with := func(base map[string]any, kv ...any) map[string]any {
		m := make(map[string]any, len(base))
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name string
		key  map[string]any
		skip string // "" = usable
	}{
		{"RSA", rsa, ""},
		{"Ed25519", ed, ""},
		{"NoUseNoAlg", with(rsa, "use", "", "alg", ""), ""},
		{"EncryptionKey", with(rsa, "use", "enc"), "is not sig"},
		{"RSAKeyClaimingEdDSA", with(rsa, "alg", "EdDSA"), `alg "EdDSA" does not fit a RSA 2048 key`},
		{"RSAKeyClaimingPS256", with(rsa, "alg", "PS256"), "does not fit"},
		{"EdKeyClaimingRS256", with(ed, "alg", "RS256"), "does not fit"},
		{"SymmetricKey", map[string]any{"kty": "oct", "kid": "hs", "k": "c2VjcmV0"}, `key type "oct"`},
		{"ECKey", jwkOf(t, "ec", ecKeyA()), ""},
		{"ECKeyClaimingES256", with(jwkOf(t, "ec", ecKeyA()), "alg", "ES256"), ""},
		{"ECPointTooShort", map[string]any{"kty": "EC", "crv": "P-256", "kid": "ec", "x": "AA", "y": "AA"}, "bad EC point"},
		{"ECPointOffTheCurve", with(jwkOf(t, "ec", ecKeyA()), "y", base64.RawURLEncoding.EncodeToString(make([]byte, 32))), "bad EC point"},
		{"ECP384", with(jwkOf(t, "ec", ecKeyA()), "crv", "P-384"), `EC curve "P-384" is not P-256`},
		{"ECKeyClaimingRS256", with(jwkOf(t, "ec", ecKeyA()), "alg", "RS256"), "does not fit"},
		{"RSAKeyClaimingRS512", with(rsa, "alg", "RS512"), ""},
		{"X25519", with(ed, "crv", "X25519"), "is not Ed25519"},
		{"ShortEd25519", with(ed, "x", "AAAA"), "wrong size"},
		{"ShortRSA", jwkOf(t, "short", mustRSA(1024)), "shorter than 2048"},
		{"EvenExponent", with(rsa, "e", "Ag"), "bad RSA exponent"},
		{"BadModulus", with(rsa, "n", "!!"), "bad RSA modulus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := mustJSONBytes(t, map[string]any{"keys": []any{tc.key, ed}})
			keys, skipped, err := parseJWKS(doc)
			require.NoError(t, err)
			if tc.skip == "" {
				require.Len(t, keys, 2)
				require.Empty(t, skipped)
				return
			}
			require.Len(t, keys, 1)
			require.Len(t, skipped, 1)
			require.Contains(t, skipped[0], tc.skip)
		})
	}

	t.Run("NoUsableKeyIsAnError", func(t *testing.T) {
		t.Parallel()
		_, _, err := parseJWKS([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`))
		require.ErrorContains(t, err, "no usable")
		_, _, err = parseJWKS([]byte(`{"keys":[]}`))
		require.ErrorContains(t, err, "no usable")
		_, _, err = parseJWKS([]byte(`[1,2]`))
		require.ErrorContains(t, err, "jwks decode")
	})
}

func TestJWKSUnknownKidFloodIsRateLimited(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, jwkOf(t, "rsa-1", rsaKeyA()))
	clk := newClock(t0)
	// The fetch timeout is not under test: under a loaded test run a loopback fetch
	// must not fail on it (the tokens are signed beforehand for the same reason).
	v := jwksVerifier(t, srv, clk, func(c *Config) { c.JWKSTimeout = time.Minute })
	require.NoError(t, v.jwks.refresh(t.Context(), "start"))
	require.EqualValues(t, 1, srv.fetches.Load())
	clk.advance(time.Minute)

	// 64 concurrent tokens, each with a kid nobody published: one fetch in total.
	tokens := make([]string, 64)
	for i := range tokens {
		tokens[i] = sign(t, jwt.SigningMethodRS256, rsaKeyA(), fmt.Sprintf("random-%d", i), claims("admin"))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(tokens))
	for i := range errs {
		wg.Go(func() { _, errs[i] = v.Verify(t.Context(), tokens[i]) })
	}
	wg.Wait()
	for _, err := range errs {
		requireRefused(t, err, ErrUnauthenticated, MsgUnknownKeyID)
	}
	require.EqualValues(t, 2, srv.fetches.Load())

	// Once the window has passed, an unknown kid may fetch again.
	clk.advance(11 * time.Second)
	_, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, rsaKeyA(), "random-again", claims("admin")))
	requireRefused(t, err, ErrUnauthenticated, MsgUnknownKeyID)
	require.EqualValues(t, 3, srv.fetches.Load())
}
