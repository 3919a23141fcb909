// Package brokerauth holds what queen-proxy presents to the brokers: with broker
// auth "jwt", a short-lived JWT per (principal, role, tenant), signed with the
// proxy's key (EdDSA, RS256 or HS256) and reused until a minute before it expires,
// and the JWKS of the public key for the brokers' JWT_JWKS_URL. Minted tokens never
// leave the proxy. The package signs with the standard library only.
package brokerauth
