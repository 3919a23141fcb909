// Package auth verifies the JWT bearer tokens of queen's HTTP API and maps their role
// claims to access levels (see docs/security.md). It knows nothing of HTTP routing:
// package httpapi owns the middleware, decides which [Level] each route needs, and turns
// the errors of this package into 401, 403 and 503 answers.
//
// A [Verifier] is built once from the JWT_* settings. It accepts a closed set of
// algorithms, fixed at construction:
//
//	JWT_ALGORITHM        accepted token "alg"        key
//	HS256, HS384, HS512  itself                      JWT_SECRET (raw bytes of the string)
//	RS256                RS256, RS384, RS512         JWT_PUBLIC_KEY (RSA), else the JWKS
//	RS384, RS512         itself                      JWT_PUBLIC_KEY (RSA), else the JWKS
//	ES256                ES256 (ECDSA P-256)         JWT_PUBLIC_KEY (P-256), else the JWKS
//	EdDSA                EdDSA (Ed25519)             JWT_PUBLIC_KEY (Ed25519), else the JWKS
//	auto                 every algorithm above whose key is configured
//
// The key for a token is chosen by the algorithm this package accepted, never by data
// the token carries: HMAC algorithms are only ever checked against JWT_SECRET, and an
// asymmetric key is only ever used with the algorithms of its own type, so an HS256
// token "signed" with the RSA public key (algorithm confusion) and "alg":"none" are
// refused. The token header's jku, x5u and jwk members are ignored; a crit member is
// refused.
//
// Roles are a set, not a ladder: read-only passes read-only routes, write-only passes
// write-only routes (push), read-write passes both and every other non-admin route,
// admin passes everything (see [Level.Allows]).
//
// JWKS: the document at JWT_JWKS_URL is fetched by [Verifier.Run] at start and every
// JWT_JWKS_REFRESH_INTERVAL, and again when a token names a kid that is not cached, at
// most once per [Config.JWKSMinRefetchInterval] however many such tokens arrive. Each
// successful fetch replaces the cache; a failed one keeps the last good keys. Only RSA
// (at least 2048 bits), EC P-256 and Ed25519 keys are kept, a JWK whose "use" is not "sig" or
// whose "alg" names another algorithm is skipped, and a key is used only for tokens of
// its own type.
//
// Messages of refusals are fixed strings: nothing from the token (claims, kid, alg) is
// echoed back, and this package never logs a token.
package auth
