package auth

import (
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

func TestNewVerifier(t *testing.T) {
	t.Parallel()
	rsaPEM := publicPEM(t, rsaKeyA().Public())
	edPEM := publicPEM(t, edKeyA().Public())
	ecPEM := publicPEM(t, ecKeyA().Public())
	for _, tc := range []struct {
		name     string
		cfg      Config
		err      string // "" = valid
		accepted []string
		warning  string
	}{
		{"HS256", Config{Algorithm: "HS256", Secret: testSecret}, "", []string{"HS256"}, ""},
		{"HS256WithoutSecret", Config{Algorithm: "HS256", JWKSURL: "https://idp/jwks"}, "needs JWT_SECRET", nil, ""},
		{"HS256IgnoresKeys", Config{Algorithm: "HS256", Secret: testSecret, PublicKeyPEM: rsaPEM}, "", []string{"HS256"}, "ignored with JWT_ALGORITHM=HS256"},
		{"HS256WeakSecret", Config{Algorithm: "HS256", Secret: "short"}, "", []string{"HS256"}, "shorter than 32 bytes"},
		{"RS256PublicKey", Config{Algorithm: "RS256", PublicKeyPEM: rsaPEM}, "", []string{"RS256", "RS384", "RS512"}, ""},
		{"RS256JWKS", Config{Algorithm: "RS256", JWKSURL: "https://idp/jwks"}, "", []string{"RS256", "RS384", "RS512"}, ""},
		{"RS384PublicKey", Config{Algorithm: "RS384", PublicKeyPEM: rsaPEM}, "", []string{"RS384"}, ""},
		{"RS512JWKS", Config{Algorithm: "RS512", JWKSURL: "https://idp/jwks"}, "", []string{"RS512"}, ""},
		{"HS384", Config{Algorithm: "HS384", Secret: testSecret}, "", []string{"HS384"}, ""},
		{"HS512WithoutSecret", Config{Algorithm: "HS512", PublicKeyPEM: rsaPEM}, "JWT_ALGORITHM=HS512 needs JWT_SECRET", nil, ""},
		{"ES256PublicKey", Config{Algorithm: "ES256", PublicKeyPEM: ecPEM}, "", []string{"ES256"}, ""},
		{"ES256WithRSAKey", Config{Algorithm: "ES256", PublicKeyPEM: rsaPEM}, "is an RSA 2048 key", nil, ""},
		{"RS256WithECKey", Config{Algorithm: "RS256", PublicKeyPEM: ecPEM}, "is an ECDSA P-256 key", nil, ""},
		{"AutoECOnly", Config{Algorithm: "auto", PublicKeyPEM: ecPEM}, "", []string{"ES256"}, ""},
		{"RS256WithoutKey", Config{Algorithm: "RS256", Secret: testSecret}, "needs JWT_PUBLIC_KEY or JWT_JWKS_URL", nil, ""},
		{"RS256WithEd25519Key", Config{Algorithm: "RS256", PublicKeyPEM: edPEM}, "is an Ed25519 key", nil, ""},
		{"EdDSAWithRSAKey", Config{Algorithm: "EdDSA", PublicKeyPEM: rsaPEM}, "is an RSA 2048 key", nil, ""},
		{"EdDSAPublicKey", Config{Algorithm: "EdDSA", PublicKeyPEM: edPEM}, "", []string{"EdDSA"}, ""},
		{"RS256IgnoresSecret", Config{Algorithm: "RS256", PublicKeyPEM: rsaPEM, Secret: testSecret}, "", []string{"RS256", "RS384", "RS512"}, "JWT_SECRET is ignored"},
		{"PublicKeyOverridesJWKS", Config{Algorithm: "RS256", PublicKeyPEM: rsaPEM, JWKSURL: "https://idp/jwks"}, "", []string{"RS256", "RS384", "RS512"}, "JWT_JWKS_URL is ignored"},
		{"AutoSecretOnly", Config{Algorithm: "auto", Secret: testSecret}, "", []string{"HS256", "HS384", "HS512"}, ""},
		{"AutoSecretAndRSA", Config{Algorithm: "auto", Secret: testSecret, PublicKeyPEM: rsaPEM}, "", []string{"HS256", "HS384", "HS512", "RS256", "RS384", "RS512"}, ""},
		{"AutoEd25519Only", Config{Algorithm: "auto", PublicKeyPEM: edPEM}, "", []string{"EdDSA"}, ""},
		{"AutoJWKSOnly", Config{Algorithm: "auto", JWKSURL: "http://127.0.0.1:1/jwks"}, "", []string{"RS256", "RS384", "RS512", "ES256", "EdDSA"}, ""},
		{"AutoNothing", Config{Algorithm: "auto"}, "needs JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL", nil, ""},
		{"UnknownAlgorithm", Config{Algorithm: "PS256", Secret: testSecret}, "must be HS256, HS384, HS512, RS256, RS384, RS512, ES256, EdDSA or auto", nil, ""},
		{"LowercaseAlgorithm", Config{Algorithm: "hs256", Secret: testSecret}, "must be HS256, HS384, HS512, RS256, RS384, RS512, ES256, EdDSA or auto", nil, ""},
		{"JWKSNotHTTP", Config{Algorithm: "RS256", JWKSURL: "file:///etc/jwks.json"}, "must be an http or https URL", nil, ""},
		{"GarbagePEM", Config{Algorithm: "RS256", PublicKeyPEM: "not a key"}, "not a PEM block", nil, ""},
		{"PrivateKeyPEM", Config{Algorithm: "RS256", PublicKeyPEM: privatePEM(t)}, "is a private key", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := NewVerifier(tc.cfg)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.NotContains(t, err.Error(), "PRIVATE KEY-----", "key material in the error")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.accepted, v.Accepted())
			if tc.warning == "" {
				require.Empty(t, v.Warnings())
			} else {
				require.Len(t, v.Warnings(), 1)
				require.Contains(t, v.Warnings()[0], tc.warning)
			}
			for _, a := range v.LogAttrs() {
				require.NotContains(t, a.Value.String(), testSecret, "secret in the boot log")
			}
		})
	}
}

func privatePEM(t *testing.T) string {
	der, err := x509.MarshalPKCS8PrivateKey(rsaKeyA())
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

func TestParsePublicKey(t *testing.T) {
	t.Parallel()

	t.Run("PKCS1AndPKIXAndEscapedNewlines", func(t *testing.T) {
		t.Parallel()
		pkcs1 := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&rsaKeyA().PublicKey)}))
		k, err := ParsePublicKey(pkcs1)
		require.NoError(t, err)
		require.Equal(t, "RSA 2048", describeKey(k))
		k, err = ParsePublicKey("\n  " + publicPEM(t, edKeyA().Public()) + "\n")
		require.NoError(t, err)
		require.Equal(t, "Ed25519", describeKey(k))
	})

	t.Run("RefusesShortRSA", func(t *testing.T) {
		t.Parallel()
		_, err := ParsePublicKey(publicPEM(t, mustRSA(1024).Public()))
		require.ErrorContains(t, err, "RSA key of 1024 bits is shorter than 2048")
	})

	t.Run("RefusesAPrivateKeyAfterThePublicOne", func(t *testing.T) {
		t.Parallel()
		priv := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKeyA())}))
		_, err := ParsePublicKey(publicPEM(t, rsaKeyA().Public()) + priv)
		require.ErrorContains(t, err, "is a private key or holds one")
	})
}

func TestVerify(t *testing.T) {
	t.Parallel()
	v := newTestVerifier(t, Config{Algorithm: "HS256", Secret: testSecret, ClockSkew: 30 * time.Second})

	t.Run("ValidTokenGivesPrincipal", func(t *testing.T) {
		t.Parallel()
		p, err := v.Verify(t.Context(), hs256(t, claims("read-write", "sub", "svc-orders", "username", "orders")))
		require.NoError(t, err)
		require.Equal(t, &Principal{Subject: "svc-orders", Username: "orders", Roles: []string{"read-write"}, Level: ReadWrite,
			Grants: []Level{ReadWrite}, ExpiresAt: time.Unix(t0.Add(time.Hour).Unix(), 0)}, p)
	})

	t.Run("TokenWithoutExpIsAccepted", func(t *testing.T) {
		t.Parallel()
		p, err := v.Verify(t.Context(), hs256(t, claims("admin", "exp", nil, "iat", nil)))
		require.NoError(t, err)
		require.True(t, p.ExpiresAt.IsZero(), "no exp claim, no expiry")
	})

	t.Run("NonStringClaimsAreIgnored", func(t *testing.T) {
		t.Parallel()
		p, err := v.Verify(t.Context(), hs256(t, claims("admin", "sub", 42, "username", true, "id", 7)))
		require.NoError(t, err)
		require.Empty(t, p.Subject)
		require.Empty(t, p.Username)
		require.Equal(t, Admin, p.Level)
	})

	for _, tc := range []struct {
		name  string
		token func(t *testing.T) string
		msg   string
	}{
		{"Empty", func(*testing.T) string { return "" }, MsgAuthRequired},
		{"Garbage", func(*testing.T) string { return "not-a-jwt" }, MsgMalformed},
		{"BadBase64", func(*testing.T) string { return "!!!.???.***" }, MsgMalformed},
		{"Oversized", func(*testing.T) string { return strings.Repeat("a", maxTokenBytes+1) }, MsgMalformed},
		{"WrongSecret", func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, []byte("another-secret-another-secret-xx"), "", claims("admin"))
		}, MsgBadSignature},
		{"TamperedClaims", func(t *testing.T) string {
			parts := strings.Split(hs256(t, claims("read-only")), ".")
			forged := strings.Split(hs256(t, claims("admin")), ".")
			return parts[0] + "." + forged[1] + "." + parts[2]
		}, MsgBadSignature},
		{"Expired", func(t *testing.T) string {
			return hs256(t, claims("admin", "exp", t0.Add(-31*time.Second).Unix()))
		}, MsgExpired},
		{"NotBeforeInTheFuture", func(t *testing.T) string {
			return hs256(t, claims("admin", "nbf", t0.Add(31*time.Second).Unix()))
		}, MsgNotYetValid},
		{"IssuedInTheFuture", func(t *testing.T) string {
			return hs256(t, claims("admin", "iat", t0.Add(31*time.Second).Unix()))
		}, MsgNotYetValid},
		{"ExpIsAString", func(t *testing.T) string { return hs256(t, claims("admin", "exp", "tomorrow")) }, MsgBadClaims},
		{"ExpiredAndBadSignatureReportsSignature", func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, []byte("another-secret-another-secret-xx"), "",
				claims("admin", "exp", t0.Add(-time.Hour).Unix()))
		}, MsgBadSignature},
		{"HS384IsNotAccepted", func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS384, []byte(testSecret), "", claims("admin"))
		}, MsgUnsupportedAlg},
		{"CritHeader", func(t *testing.T) string {
			tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims("admin"))
			tok.Header["crit"] = []string{"exp"}
			s, err := tok.SignedString([]byte(testSecret))
			require.NoError(t, err)
			return s
		}, MsgMalformed},
	} {
		t.Run("Refuses"+tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := v.Verify(t.Context(), tc.token(t))
			requireRefused(t, err, ErrUnauthenticated, tc.msg)
		})
	}

	t.Run("SkewIsHonoured", func(t *testing.T) {
		t.Parallel()
		for _, c := range []jwt.MapClaims{
			claims("admin", "exp", t0.Add(-29*time.Second).Unix()),
			claims("admin", "nbf", t0.Add(29*time.Second).Unix()),
			claims("admin", "iat", t0.Add(29*time.Second).Unix()),
		} {
			_, err := v.Verify(t.Context(), hs256(t, c))
			require.NoError(t, err, "%v", c)
		}
	})
}

func TestIssuerAndAudience(t *testing.T) {
	t.Parallel()
	v := newTestVerifier(t, Config{Algorithm: "HS256", Secret: testSecret, Issuer: "https://idp.example", Audience: "queen"})
	for _, tc := range []struct {
		name string
		kv   []any
		msg  string // "" = accepted
	}{
		{"Match", []any{"iss", "https://idp.example", "aud", "queen"}, ""},
		{"AudienceArray", []any{"iss", "https://idp.example", "aud", []string{"other", "queen"}}, ""},
		{"WrongIssuer", []any{"iss", "https://evil.example", "aud", "queen"}, MsgBadIssuer},
		{"MissingIssuer", []any{"aud", "queen"}, MsgBadIssuer},
		{"IssuerCaseMatters", []any{"iss", "https://IDP.example", "aud", "queen"}, MsgBadIssuer},
		{"WrongAudience", []any{"iss", "https://idp.example", "aud", "other"}, MsgBadAudience},
		{"MissingAudience", []any{"iss", "https://idp.example"}, MsgBadAudience},
		{"AudienceNotString", []any{"iss", "https://idp.example", "aud", 7}, MsgBadAudience},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := v.Verify(t.Context(), hs256(t, claims("admin", tc.kv...)))
			if tc.msg == "" {
				require.NoError(t, err)
				return
			}
			requireRefused(t, err, ErrUnauthenticated, tc.msg)
		})
	}
}

func TestAsymmetricPublicKey(t *testing.T) {
	t.Parallel()

	t.Run("RS256", func(t *testing.T) {
		t.Parallel()
		v := newTestVerifier(t, Config{Algorithm: "RS256", PublicKeyPEM: publicPEM(t, rsaKeyA().Public())})
		p, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, rsaKeyA(), "any-kid-is-fine", claims("read-only")))
		require.NoError(t, err)
		require.Equal(t, ReadOnly, p.Level)
		_, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, rsaKeyB(), "", claims("read-only")))
		requireRefused(t, err, ErrUnauthenticated, MsgBadSignature)
		// RS256 names the RSA family, as in Queen 1.x: RS512 passes; RS384 alone does not
		// accept RS512.
		_, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodRS512, rsaKeyA(), "", claims("read-only")))
		require.NoError(t, err)
		v384 := newTestVerifier(t, Config{Algorithm: "RS384", PublicKeyPEM: publicPEM(t, rsaKeyA().Public())})
		_, err = v384.Verify(t.Context(), sign(t, jwt.SigningMethodRS512, rsaKeyA(), "", claims("read-only")))
		requireRefused(t, err, ErrUnauthenticated, MsgUnsupportedAlg)
	})

	t.Run("EdDSA", func(t *testing.T) {
		t.Parallel()
		v := newTestVerifier(t, Config{Algorithm: "EdDSA", PublicKeyPEM: publicPEM(t, edKeyA().Public())})
		p, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodEdDSA, edKeyA(), "", claims("admin")))
		require.NoError(t, err)
		require.Equal(t, Admin, p.Level)
		_, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodEdDSA, edKeyB(), "", claims("admin")))
		requireRefused(t, err, ErrUnauthenticated, MsgBadSignature)
		_, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, rsaKeyA(), "", claims("admin")))
		requireRefused(t, err, ErrUnauthenticated, MsgUnsupportedAlg)
	})

	t.Run("AutoDispatchesOnTheHeader", func(t *testing.T) {
		t.Parallel()
		v := newTestVerifier(t, Config{Algorithm: "auto", Secret: testSecret, PublicKeyPEM: publicPEM(t, rsaKeyA().Public())})
		_, err := v.Verify(t.Context(), hs256(t, claims("admin")))
		require.NoError(t, err)
		_, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, rsaKeyA(), "", claims("admin")))
		require.NoError(t, err)
		_, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodEdDSA, edKeyA(), "", claims("admin")))
		requireRefused(t, err, ErrUnauthenticated, MsgUnsupportedAlg)
		_, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodES256, mustECDSA(t), "", claims("admin")))
		requireRefused(t, err, ErrUnauthenticated, MsgUnsupportedAlg)
		_, err = v.Verify(t.Context(), sign(t, jwt.SigningMethodHS512, []byte(testSecret), "", claims("admin")))
		require.NoError(t, err, "auto with a secret accepts every HMAC algorithm")
	})

	t.Run("AutoWithoutSecretRefusesHS256", func(t *testing.T) {
		t.Parallel()
		v := newTestVerifier(t, Config{Algorithm: "auto", PublicKeyPEM: publicPEM(t, edKeyA().Public())})
		_, err := v.Verify(t.Context(), hs256(t, claims("admin")))
		requireRefused(t, err, ErrUnauthenticated, MsgUnsupportedAlg)
	})
}

func TestRoles(t *testing.T) {
	t.Parallel()
	custom := RoleNames{Claim: "queen_role", ArrayClaim: "groups", Admin: "ops", ReadWrite: "writer", ReadOnly: "reader"}
	for _, tc := range []struct {
		name  string
		names RoleNames
		kv    []any
		want  Level
	}{
		{"NoRole", RoleNames{}, nil, None},
		{"SingleReadOnly", RoleNames{}, []any{"role", "read-only"}, ReadOnly},
		{"SingleReadWrite", RoleNames{}, []any{"role", "read-write"}, ReadWrite},
		{"SingleAdmin", RoleNames{}, []any{"role", "admin"}, Admin},
		{"UnknownRole", RoleNames{}, []any{"role", "superuser"}, None},
		{"CaseSensitive", RoleNames{}, []any{"role", "Admin"}, None},
		{"ArrayHighestWins", RoleNames{}, []any{"roles", []any{"read-only", "admin"}}, Admin},
		{"ArraySkipsNonStrings", RoleNames{}, []any{"roles", []any{1, true, "read-write"}}, ReadWrite},
		{"RoleAndArrayCombine", RoleNames{}, []any{"role", "read-only", "roles", []any{"read-write"}}, ReadWrite},
		{"RoleNotString", RoleNames{}, []any{"role", []any{"admin"}}, None},
		{"ArrayNotArray", RoleNames{}, []any{"roles", "admin"}, None},
		{"CustomNames", custom, []any{"queen_role", "writer"}, ReadWrite},
		{"CustomArray", custom, []any{"groups", []any{"ops"}}, Admin},
		{"CustomIgnoresDefaults", custom, []any{"role", "admin", "roles", []any{"admin"}}, None},
		{"SingleWriteOnly", RoleNames{}, []any{"role", "write-only"}, WriteOnly},
		{"ReadOnlyOutranksWriteOnly", RoleNames{}, []any{"roles", []any{"write-only", "read-only"}}, ReadOnly},
		{"ReadWriteOutranksWriteOnly", RoleNames{}, []any{"roles", []any{"write-only", "read-write"}}, ReadWrite},
		{"CustomWithoutWriteOnly", custom, []any{"role", "write-only"}, None},
		{"EmptyRoleNeverMatches", RoleNames{Claim: "role", ArrayClaim: "roles", Admin: "", ReadWrite: "rw", ReadOnly: "ro"}, []any{"role", ""}, None},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newTestVerifier(t, Config{Algorithm: "HS256", Secret: testSecret, Roles: tc.names})
			p, err := v.Verify(t.Context(), hs256(t, claims("", tc.kv...)))
			require.NoError(t, err)
			require.Equal(t, tc.want, p.Level)
		})
	}
}

func TestRequire(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		p        *Principal
		required Level
		kind     error // nil = allowed
	}{
		{"PublicNeedsNothing", nil, Public, nil},
		{"NoPrincipal", nil, ReadOnly, ErrUnauthenticated},
		{"NoRoleIsForbiddenEverywhere", &Principal{Level: None}, ReadOnly, ErrForbidden},
		{"ReadOnlyReads", &Principal{Level: ReadOnly}, ReadOnly, nil},
		{"ReadOnlyCannotWrite", &Principal{Level: ReadOnly}, ReadWrite, ErrForbidden},
		{"ReadWriteWrites", &Principal{Level: ReadWrite}, ReadWrite, nil},
		{"ReadWriteIsNotAdmin", &Principal{Level: ReadWrite}, Admin, ErrForbidden},
		{"AdminDoesAll", &Principal{Level: Admin}, Admin, nil},
		{"AdminPushes", &Principal{Level: Admin}, WriteOnly, nil},
		{"ReadWritePushes", &Principal{Level: ReadWrite}, WriteOnly, nil},
		{"WriteOnlyPushes", &Principal{Level: WriteOnly}, WriteOnly, nil},
		{"WriteOnlyCannotRead", &Principal{Level: WriteOnly}, ReadOnly, ErrForbidden},
		{"WriteOnlyCannotConsume", &Principal{Level: WriteOnly}, ReadWrite, ErrForbidden},
		{"WriteOnlyIsNotAdmin", &Principal{Level: WriteOnly}, Admin, ErrForbidden},
		{"ReadOnlyCannotPush", &Principal{Level: ReadOnly}, WriteOnly, ErrForbidden},
		{"BothRolesRead", &Principal{Level: ReadOnly, Grants: []Level{ReadOnly, WriteOnly}}, ReadOnly, nil},
		{"BothRolesPush", &Principal{Level: ReadOnly, Grants: []Level{ReadOnly, WriteOnly}}, WriteOnly, nil},
		{"BothRolesCannotConsume", &Principal{Level: ReadOnly, Grants: []Level{ReadOnly, WriteOnly}}, ReadWrite, ErrForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.p.Require(tc.required)
			if tc.kind == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.kind)
		})
	}
}

func TestTokenFromAuthorization(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"Bearer abc.def.ghi", "abc.def.ghi"},
		{"bearer abc", "abc"},
		{"BEARER   abc  ", "abc"},
		{"abc.def.ghi", "abc.def.ghi"}, // upstream leniency: the whole value
		{"Bearer ", "Bearer"},
		{"Basic dXNlcjpwYXNz", "Basic dXNlcjpwYXNz"},
	} {
		require.Equal(t, tc.want, TokenFromAuthorization(tc.in), "%q", tc.in)
	}
}
