package config

import (
	"time"

	"github.com/queenmq/queen/internal/envvalue"
)

// jwtSettings: bearer-token authentication (see docs/security.md).
func jwtSettings() []setting {
	return []setting{
		{
			name: "JWT_ENABLED", def: "false", group: groupJWT,
			doc: "Require a valid bearer token on every route except the public ones and `JWT_SKIP_PATHS`. " +
				"With it on, an incomplete JWT configuration stops startup.",
			bind: func(c *Config) value { return envvalue.Bool{P: &c.JWTEnabled} },
		},
		{
			name: "JWT_ALGORITHM", def: "HS256", group: groupJWT,
			doc: "Token algorithms accepted. `HS256`, `HS384` and `HS512` need `JWT_SECRET`; `RS256` (which " +
				"also accepts `RS384` and `RS512` tokens, as the Queen 1.x brokers do), `RS384`, `RS512`, " +
				"`ES256` and `EdDSA` need `JWT_JWKS_URL` or `JWT_PUBLIC_KEY`; each other value accepts " +
				"exactly its own algorithm. `auto` accepts every algorithm whose key is configured and needs " +
				"at least one of the three. A token of another algorithm is 401 `Unsupported token algorithm`.",
			bind: func(c *Config) value {
				return envvalue.Enum{P: &c.JWTAlgorithm, Options: jwtAlgorithms()}
			},
		},
		{
			name: "JWT_SECRET", def: "", group: groupJWT, secret: true,
			doc:  "HS256, HS384 and HS512 key, used as the raw bytes of the string. Best given as the systemd credential `JWT_SECRET`.",
			bind: func(c *Config) value { return envvalue.Text{P: &c.JWTSecret} },
		},
		{
			name: "JWT_JWKS_URL", def: "", group: groupJWT,
			doc:  "JWKS endpoint (http or https) with the RSA, EC P-256 or Ed25519 verification keys.",
			bind: func(c *Config) value { return envvalue.URL{P: &c.JWTJWKSURL} },
		},
		{
			name: "JWT_PUBLIC_KEY", def: "", group: groupJWT, credential: true,
			doc: "PEM public key (RSA for RS256/RS384/RS512, ECDSA P-256 for ES256, Ed25519 for EdDSA); when set, it verifies every asymmetric " +
				"token and the JWKS is not consulted. Since env files hold one line per " +
				"variable, `\\n` sequences are read as newlines when the value has no real newline. " +
				"May also be given as the systemd credential `JWT_PUBLIC_KEY` (the PEM file as is).",
			bind: func(c *Config) value { return envvalue.PEM{P: &c.JWTPublicKey} },
		},
		{
			name: "JWT_ISSUER", def: "", group: groupJWT,
			doc:  "If set, the token's `iss` must equal it.",
			bind: func(c *Config) value { return envvalue.Text{P: &c.JWTIssuer} },
		},
		{
			name: "JWT_AUDIENCE", def: "", group: groupJWT,
			doc:  "If set, the token's `aud` must contain it.",
			bind: func(c *Config) value { return envvalue.Text{P: &c.JWTAudience} },
		},
		{
			name: "JWT_CLOCK_SKEW", def: "30", group: groupJWT,
			doc:  "Tolerance for `exp`, `nbf` and `iat`, in seconds.",
			bind: func(c *Config) value { return envvalue.Unit{P: &c.JWTClockSkew, Unit: time.Second, Min: 0} },
		},
		{
			name: "JWT_SKIP_PATHS", def: "/health,/metrics/prometheus,/metrics,/", group: groupJWT, emptyOK: true,
			doc: "Paths served without a token, comma-separated. An entry matches exactly, and entries " +
				"ending in `/` (other than `/` itself) also match as a prefix. Set but empty: no path is skipped. " +
				"The public routes (`/health*`, `/metrics`, `/metrics/prometheus`, the dashboard's static files) " +
				"need no token whatever this list says, as upstream.",
			bind: func(c *Config) value { return envvalue.List{P: &c.JWTSkipPaths} },
		},
		{
			name: "JWT_JWKS_REFRESH_INTERVAL", def: "3600", group: groupJWT,
			doc:  "How often the JWKS is fetched again, in seconds.",
			bind: func(c *Config) value { return envvalue.Unit{P: &c.JWTJWKSRefreshInterval, Unit: time.Second, Min: 1} },
		},
		{
			name: "JWT_JWKS_TIMEOUT_MS", def: "5000", group: groupJWT,
			doc:  "Timeout of one JWKS fetch, in milliseconds.",
			bind: func(c *Config) value { return envvalue.Unit{P: &c.JWTJWKSTimeout, Unit: time.Millisecond, Min: 1} },
		},
		{
			name: "JWT_ROLES_CLAIM", def: "role", group: groupJWT,
			doc:  "Claim holding a single role.",
			bind: func(c *Config) value { return envvalue.Text{P: &c.JWTRolesClaim} },
		},
		{
			name: "JWT_ROLES_ARRAY_CLAIM", def: "roles", group: groupJWT,
			doc:  "Claim holding an array of roles.",
			bind: func(c *Config) value { return envvalue.Text{P: &c.JWTRolesArrayClaim} },
		},
		{
			name: "JWT_ROLE_ADMIN", def: "admin", group: groupJWT,
			doc:  "Role name that grants every route.",
			bind: func(c *Config) value { return envvalue.Text{P: &c.JWTRoleAdmin} },
		},
		{
			name: "JWT_ROLE_READ_WRITE", def: "read-write", group: groupJWT,
			doc:  "Role name that grants reading and writing messages.",
			bind: func(c *Config) value { return envvalue.Text{P: &c.JWTRoleReadWrite} },
		},
		{
			name: "JWT_ROLE_READ_ONLY", def: "read-only", group: groupJWT,
			doc:  "Role name that grants read-only routes (not the write-only ones).",
			bind: func(c *Config) value { return envvalue.Text{P: &c.JWTRoleReadOnly} },
		},
		{
			name: "JWT_ROLE_WRITE_ONLY", def: "write-only", group: groupJWT,
			doc: "Role name that grants the write-only routes only (`POST /api/v1/push` and " +
				"`POST /api/v1/timers`): producers that may push and nothing else, as in Queen 1.x. " +
				"To grant it to no token, set a name no token carries: empty means the default, as for " +
				"every setting.",
			bind: func(c *Config) value { return envvalue.Text{P: &c.JWTRoleWriteOnly} },
		},
	}
}

// jwtAlgorithms are the JWT_ALGORITHM values, as package auth accepts them (a test
// ties the two lists; config stays a leaf package and does not import auth).
func jwtAlgorithms() []string {
	return []string{"HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "ES256", "EdDSA", "auto"}
}

// encryptionSettings: at-rest payload encryption.
func encryptionSettings() []setting {
	return []setting{
		{
			name: "QUEEN_ENCRYPTION_KEY", def: "", defDoc: "unset: encryption off", group: groupEncryption, secret: true,
			doc: "AES-256-GCM key for queues with `encryptionEnabled`: exactly 64 hex characters (32 bytes). " +
				"Stricter than upstream, which logs an error and stores **plaintext** when the length is wrong: " +
				"queen refuses to start instead. Best given as the systemd credential `QUEEN_ENCRYPTION_KEY`.",
			bind: func(c *Config) value { return hexKeyValue{&c.EncryptionKey} },
		},
	}
}
