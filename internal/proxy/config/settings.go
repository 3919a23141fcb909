package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/editdistance"
	"github.com/queenmq/queen/internal/envvalue"
)

// setting is one variable: its default, whether it is secret, and how it is stored.
type setting struct {
	name, def string
	// fallback is a variable read when name is unset (0.15's names).
	fallback string
	secret   bool
	// credentialIsPath takes a credential of the setting's name as a file path (a
	// TLS key) rather than as the value.
	credentialIsPath bool
	// emptyIsValue takes the variable set to "" as the value "", not as unset.
	emptyIsValue bool
	doc          string
	set          func(c *Config, v string) error
}

// settings is the table that drives Load and Print.
var settings = []setting{
	{name: "HOST", def: "0.0.0.0", doc: "public listener address", set: func(c *Config, v string) error { c.Host = v; return nil }},
	{name: "PORT", def: "6640", doc: "public listener port", set: bind(func(c *Config) envvalue.Value {
		return envvalue.Int[int]{P: &c.Port, Min: 0, Max: 65535}
	})},
	{name: "QUEEN_PROXY_ADMIN_LISTEN", def: "127.0.0.1:6641", doc: "admin API and metrics listener", set: func(c *Config, v string) error {
		if _, err := netip.ParseAddrPort(v); err != nil && !strings.HasPrefix(v, "localhost:") {
			return fmt.Errorf("%q is not host:port", v)
		}
		c.AdminListen = v
		return nil
	}},
	{name: "QUEEN_PROXY_UPSTREAMS", def: "http://127.0.0.1:6632", fallback: "QUEEN_SERVER_URL", doc: "broker URLs, comma-separated: the cell default; none for no such cell", set: func(c *Config, v string) (err error) {
		c.Backends, err = parseBackends(v)
		return err
	}},
	{name: "QUEEN_TENANCY_HEADER", def: "X-Queen-Tenant", doc: "tenancy header, the brokers' QUEEN_TENANCY_HEADER", set: func(c *Config, v string) (err error) {
		c.TenancyHeader, err = tenancyHeaderValue(v)
		return err
	}},
	{name: "PG_HOST", def: "localhost", set: func(c *Config, v string) error { c.PGHost = v; return nil }},
	{name: "PG_PORT", def: "5432", set: func(c *Config, v string) error {
		_, err := envvalue.ParseInt(v, 1, 65535)
		c.PGPort = v
		return reword(v, err)
	}},
	{name: "PG_USER", def: "postgres", set: func(c *Config, v string) error { c.PGUser = v; return nil }},
	{name: "PG_PASSWORD", def: "postgres", secret: true, emptyIsValue: true, doc: "set but empty: no password (a .pgpass file, peer or trust)",
		set: func(c *Config, v string) error { c.PGPassword = v; return nil }},
	{name: "PG_DB", def: "postgres", set: func(c *Config, v string) error { c.PGDB = v; return nil }},
	{name: "PG_USE_SSL", def: "false", doc: "TLS to PostgreSQL, the server's certificate verified (sslmode=verify-full)",
		set: boolSetter(func(c *Config) *bool { return &c.PGUseSSL })},
	{name: "PG_SSL_REJECT_UNAUTHORIZED", def: "true", doc: "false: encrypt without verifying the server (sslmode=require)",
		set: boolSetter(func(c *Config) *bool { return &c.PGSSLRejectUnauthorized })},
	{name: "PG_SSL_ROOT_CERT", doc: "file of the CA certificates the server's must chain to (default: the system's)", set: pemPath(func(c *Config) *string { return &c.PGSSLRootCert })},
	{name: "PG_SSL_CERT", doc: "file of the proxy's client certificate", set: pemPath(func(c *Config) *string { return &c.PGSSLCert })},
	{name: "PG_SSL_KEY", doc: "file of the client certificate's key", credentialIsPath: true, set: pemPath(func(c *Config) *string { return &c.PGSSLKey })},
	{name: "PG_TARGET_SESSION_ATTRS", def: "read-write", doc: "read-write, primary or any: which server of PG_HOST a connection stays on",
		set: bind(func(c *Config) envvalue.Value {
			return envvalue.TargetSessionAttrs{P: &c.PGTargetSessionAttrs, Writer: "queen-proxy writes to its database"}
		})},
	{name: "DB_POOL_SIZE", def: "10", set: bind(func(c *Config) envvalue.Value {
		return envvalue.Int[int]{P: &c.DBPoolSize, Min: 2, Max: 1000}
	})},
	{name: "DB_CONNECTION_TIMEOUT", def: "2000", doc: "milliseconds", set: millis(func(c *Config) *time.Duration { return &c.DBConnectionTimeout })},
	{name: "DB_STATEMENT_TIMEOUT", def: "30000", doc: "milliseconds", set: millis(func(c *Config) *time.Duration { return &c.DBStatementTimeout })},
	{name: "QUEEN_PROXY_BROKER_AUTH", def: "none", doc: "none or jwt", set: func(c *Config, v string) error {
		if v != "none" && v != "jwt" {
			return fmt.Errorf("%q is not none or jwt", v)
		}
		c.BrokerAuth = v
		return nil
	}},
	{name: "QUEEN_PROXY_BROKER_JWT_KEY", fallback: "JWT_SECRET", secret: true, doc: "PEM private key (Ed25519, RSA >= 2048) or HS256 secret", set: func(c *Config, v string) (err error) {
		if v == "" {
			return nil
		}
		c.BrokerJWTKey, err = parseSigningKey(v)
		return err
	}},
	{name: "QUEEN_PROXY_BROKER_JWT_ISSUER", def: "queen-proxy", set: func(c *Config, v string) error { c.BrokerJWTIssuer = v; return nil }},
	{name: "QUEEN_PROXY_BROKER_JWT_AUDIENCE", def: "queen", set: func(c *Config, v string) error { c.BrokerJWTAudience = v; return nil }},
	{name: "QUEEN_PROXY_BROKER_JWT_TTL", def: "5m", set: durationSetter(time.Minute, time.Hour, func(c *Config) *time.Duration { return &c.BrokerJWTTTL })},
	{name: "QUEEN_PROXY_BROKER_ROLE_ADMIN", def: "admin", set: func(c *Config, v string) error { c.BrokerRoleAdmin = v; return nil }},
	{name: "QUEEN_PROXY_BROKER_ROLE_READ_WRITE", def: "read-write", set: func(c *Config, v string) error { c.BrokerRoleReadWrite = v; return nil }},
	{name: "QUEEN_PROXY_BROKER_ROLE_READ_ONLY", def: "read-only", set: func(c *Config, v string) error { c.BrokerRoleReadOnly = v; return nil }},
	{name: "QUEEN_PROXY_BROKER_ROLE_WRITE_ONLY", def: "write-only", doc: "the broker role of push keys", set: func(c *Config, v string) error { c.BrokerRoleWriteOnly = v; return nil }},
	{name: "QUEEN_PROXY_ADMIN_TOKEN", secret: true, doc: "bearer token of the admin API, >= 32 characters", set: func(c *Config, v string) error { c.AdminToken = v; return nil }},
	{name: "QUEEN_PROXY_LOGIN", def: "true", set: boolSetter(func(c *Config) *bool { return &c.Login })},
	{name: "QUEEN_PROXY_SESSION_KEY", secret: true, set: func(c *Config, v string) error { c.SessionKey = v; return nil }},
	{name: "QUEEN_PROXY_SESSION_TTL", def: "24h", set: durationSetter(time.Minute, 30*24*time.Hour, func(c *Config) *time.Duration { return &c.SessionTTL })},
	{name: "QUEEN_PROXY_TLS_CERT_FILE", credentialIsPath: true, doc: "a path, or a credential of that name", set: func(c *Config, v string) error { c.TLSCertFile = v; return nil }},
	{name: "QUEEN_PROXY_TLS_KEY_FILE", credentialIsPath: true, doc: "a path, or a credential of that name", set: func(c *Config, v string) error { c.TLSKeyFile = v; return nil }},
	{name: "QUEEN_PROXY_TRUSTED_PROXIES", doc: "CIDRs allowed to set X-Forwarded-*", set: func(c *Config, v string) error {
		c.TrustedProxies = nil
		for part := range strings.SplitSeq(v, ",") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			p, err := netip.ParsePrefix(part)
			if err != nil {
				return fmt.Errorf("%q is not a CIDR", part)
			}
			c.TrustedProxies = append(c.TrustedProxies, p)
		}
		return nil
	}},
	{name: "QUEEN_PROXY_CORS_ALLOWED_ORIGINS", doc: "browser origins (or *) that get CORS headers; empty: CORS off", set: bind(func(c *Config) envvalue.Value {
		return envvalue.List{P: &c.CORSAllowedOrigins, Check: envvalue.CheckOrigin}
	})},
	{name: "QUEEN_PROXY_MAX_BODY_BYTES", def: "16777216", set: bind(func(c *Config) envvalue.Value {
		return envvalue.Int[int64]{P: &c.MaxBodyBytes, Min: 1024, Max: 1 << 30}
	})},
	{name: "QUEEN_PROXY_MAX_POP_TIMEOUT", def: "120s", set: durationSetter(time.Second, time.Hour, func(c *Config) *time.Duration { return &c.MaxPopTimeout })},
	{name: "QUEEN_PROXY_UPSTREAM_TIMEOUT", def: "60s", set: durationSetter(time.Second, time.Hour, func(c *Config) *time.Duration { return &c.BackendTimeout })},
	{name: "QUEEN_PROXY_UPSTREAM_CHECK_INTERVAL", def: "2s", set: durationSetter(100*time.Millisecond, time.Minute, func(c *Config) *time.Duration { return &c.BackendCheckInterval })},
	{name: "QUEEN_PROXY_AUTH_CACHE_TTL", def: "5s", set: durationSetter(100*time.Millisecond, 10*time.Minute, func(c *Config) *time.Duration { return &c.AuthCacheTTL })},
	{name: "QUEEN_PROXY_LIMITER_SYNC_INTERVAL", def: "1s", set: durationSetter(50*time.Millisecond, time.Minute, func(c *Config) *time.Duration { return &c.LimiterSyncInterval })},
	{name: "QUEEN_PROXY_USAGE_REFRESH", def: "30s", set: durationSetter(100*time.Millisecond, time.Hour, func(c *Config) *time.Duration { return &c.UsageRefresh })},
	{name: "QUEEN_PROXY_USAGE_FLUSH_INTERVAL", def: "10s", set: durationSetter(100*time.Millisecond, time.Minute, func(c *Config) *time.Duration { return &c.UsageFlushInterval })},
	{name: "QUEEN_PROXY_QUOTA_FAIL_CLOSED", def: "false", set: boolSetter(func(c *Config) *bool { return &c.QuotaFailClosed })},
	{name: "QUEEN_PROXY_SHUTDOWN_TIMEOUT", def: "20s", set: durationSetter(0, 10*time.Minute, func(c *Config) *time.Duration { return &c.ShutdownTimeout })},
	{name: "QUEEN_PROXY_SHUTDOWN_DELAY", def: "0s", doc: "on SIGTERM, how long to keep serving with /health/ready at 503 before draining; less than QUEEN_PROXY_SHUTDOWN_TIMEOUT",
		set: durationSetter(0, 10*time.Minute, func(c *Config) *time.Duration { return &c.ShutdownDelay })},
	{name: "LOG_LEVEL", def: "info", doc: "trace (logs as debug, as at the broker), debug, info, warn or error", set: func(c *Config, v string) error {
		switch w := strings.ToLower(v); w {
		case "trace", "debug":
			c.LogLevel = slog.LevelDebug
		case "info", "warn", "error":
			return c.LogLevel.UnmarshalText([]byte(w))
		default:
			return fmt.Errorf("%q is not trace, debug, info, warn or error", v)
		}
		return nil
	}},
	{name: "QUEEN_PROXY_LOG_FORMAT", def: "json", doc: "json or text", set: func(c *Config, v string) error {
		if v != "json" && v != "text" {
			return fmt.Errorf("%q is not json or text", v)
		}
		c.LogFormat = v
		return nil
	}},
	{name: "QUEEN_PROXY_INSTANCE", doc: "name of this replica (default: the host name)", set: func(c *Config, v string) error { c.Instance = v; return nil }},
}

// boolSetter binds a boolean in systemd's vocabulary.
func boolSetter(field func(*Config) *bool) func(*Config, string) error {
	return bind(func(c *Config) envvalue.Value { return envvalue.Bool{P: field(c)} })
}

// durationSetter binds a Go duration from lo to hi.
func durationSetter(lo, hi time.Duration, field func(*Config) *time.Duration) func(*Config, string) error {
	return bind(func(c *Config) envvalue.Value { return envvalue.Range{P: field(c), Min: lo, Max: hi} })
}

// pemPath binds the path of a PEM file (PG_SSL_*), checked to exist now so that a
// typo fails the configuration. The broker also takes the PEM text itself; the
// proxy hands the path to the PostgreSQL driver, so it refuses text.
func pemPath(field func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error {
		if strings.Contains(v, "-----BEGIN") {
			return errors.New("queen-proxy takes the path of a PEM file here, not the PEM text")
		}
		if v != "" {
			if _, err := os.Stat(v); err != nil {
				return fmt.Errorf("cannot read %s: %w", v, errors.Unwrap(err))
			}
		}
		*field(c) = v
		return nil
	}
}

// millis binds a number of milliseconds from 1 to an hour, the broker's unit for the
// DB_* timeouts.
func millis(field func(*Config) *time.Duration) func(*Config, string) error {
	return bind(func(c *Config) envvalue.Value {
		return envvalue.Unit{P: field(c), Unit: time.Millisecond, Min: 1, Max: 3_600_000}
	})
}

// suggest names the closest known variable, for a typo.
func suggest(name string) string {
	best, bestD := "", 4
	for _, s := range settings {
		if d := editdistance.Between(name, s.name); d < bestD {
			best, bestD = s.name, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}
