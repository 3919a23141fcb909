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
	// value binds the setting to its field through the shared parser of
	// internal/envvalue, which also names what it accepts; set is for the settings
	// with a parser of their own, and kind names what that accepts.
	value func(c *Config) envvalue.Value
	set   func(c *Config, v string) error
	kind  string
}

// apply parses raw into c.
func (s setting) apply(c *Config, raw string) error {
	if s.value != nil {
		return bind(s.value)(c, raw)
	}
	return s.set(c, raw)
}

// accepts names the values the setting accepts, for the reference pages.
func (s setting) accepts() string {
	if s.value != nil {
		return s.value(&Config{}).Kind()
	}
	return s.kind
}

// settings is the table that drives Load and Print.
var settings = []setting{
	{name: "HOST", def: "0.0.0.0", kind: "IP address or host name", doc: "address of the public listener; ignored when systemd passes queen-proxy.socket", set: func(c *Config, v string) error { c.Host = v; return nil }},
	{name: "PORT", def: "6640", doc: "port of the public listener (0: any free port); ignored under queen-proxy.socket", value: func(c *Config) envvalue.Value {
		return envvalue.Int[int]{P: &c.Port, Min: 0, Max: 65535}
	}},
	{name: "QUEEN_PROXY_ADMIN_LISTEN", kind: "IP address:port or localhost:port", def: "127.0.0.1:6641", doc: "address of the admin API and the metrics: keep it on loopback or a private network; ignored under queen-proxy-admin.socket", set: func(c *Config, v string) error {
		if _, err := netip.ParseAddrPort(v); err != nil && !strings.HasPrefix(v, "localhost:") {
			return fmt.Errorf("%q is not host:port", v)
		}
		c.AdminListen = v
		return nil
	}},
	{name: "QUEEN_PROXY_UPSTREAMS", kind: "1 to 16 http:// or https:// URLs, comma-separated, or none", def: "http://127.0.0.1:6632", fallback: "QUEEN_SERVER_URL", doc: "broker URLs, comma-separated: the cell default; none for no such cell", set: func(c *Config, v string) (err error) {
		c.Backends, err = parseBackends(v)
		return err
	}},
	{name: "QUEEN_TENANCY_HEADER", kind: "header name (letters, digits, -; at most 64 bytes) or true", def: "X-Queen-Tenant", doc: "tenancy header, the brokers' QUEEN_TENANCY_HEADER", set: func(c *Config, v string) (err error) {
		c.TenancyHeader, err = tenancyHeaderValue(v)
		return err
	}},
	{name: "PG_HOST", doc: "host of the proxy's own database (not the brokers'); several, comma-separated, for a replicated cluster (see PG_TARGET_SESSION_ATTRS)", kind: "host, or comma-separated hosts", def: "localhost", set: func(c *Config, v string) error { c.PGHost = v; return nil }},
	{name: "PG_PORT", doc: "port of the proxy database", kind: "integer between 1 and 65535", def: "5432", set: func(c *Config, v string) error {
		_, err := envvalue.ParseInt(v, 1, 65535)
		c.PGPort = v
		return reword(v, err)
	}},
	{name: "PG_USER", doc: "user of the proxy database", kind: "string", def: "postgres", set: func(c *Config, v string) error { c.PGUser = v; return nil }},
	{name: "PG_PASSWORD", kind: "string", def: "postgres", secret: true, emptyIsValue: true, doc: "set but empty: no password (a .pgpass file, peer or trust)",
		set: func(c *Config, v string) error { c.PGPassword = v; return nil }},
	{name: "PG_DB", doc: "name of the proxy database; its tables are in the schema queen_proxy", kind: "string", def: "postgres", set: func(c *Config, v string) error { c.PGDB = v; return nil }},
	{name: "PG_USE_SSL", def: "false", doc: "TLS to the proxy database, the server's certificate verified (sslmode=verify-full)",
		value: boolValue(func(c *Config) *bool { return &c.PGUseSSL })},
	{name: "PG_SSL_REJECT_UNAUTHORIZED", def: "true", doc: "with PG_USE_SSL, false encrypts without verifying the server (sslmode=require)",
		value: boolValue(func(c *Config) *bool { return &c.PGSSLRejectUnauthorized })},
	{name: "PG_SSL_ROOT_CERT", kind: "path of a PEM file", doc: "file of the CA certificates the server's must chain to (default: the system's)", set: pemPath(func(c *Config) *string { return &c.PGSSLRootCert })},
	{name: "PG_SSL_CERT", kind: "path of a PEM file", doc: "file of the proxy's client certificate", set: pemPath(func(c *Config) *string { return &c.PGSSLCert })},
	{name: "PG_SSL_KEY", kind: "path of a PEM file", doc: "file of the client certificate's key", credentialIsPath: true, set: pemPath(func(c *Config) *string { return &c.PGSSLKey })},
	{name: "PG_TARGET_SESSION_ATTRS", def: "read-write", doc: "which server of PG_HOST a connection stays on: read-write or primary (the server taking writes), or any",
		value: func(c *Config) envvalue.Value {
			return envvalue.TargetSessionAttrs{P: &c.PGTargetSessionAttrs, Writer: "queen-proxy writes to its database"}
		}},
	{name: "DB_POOL_SIZE", doc: "most connections open to the proxy database", def: "10", value: func(c *Config) envvalue.Value {
		return envvalue.Int[int]{P: &c.DBPoolSize, Min: 2, Max: 1000}
	}},
	{name: "DB_CONNECTION_TIMEOUT", def: "2000", doc: "how long opening a connection to the proxy database may take, rounded up to whole seconds", value: millis(func(c *Config) *time.Duration { return &c.DBConnectionTimeout })},
	{name: "DB_STATEMENT_TIMEOUT", def: "30000", doc: "how long a statement on the proxy database may run", value: millis(func(c *Config) *time.Duration { return &c.DBStatementTimeout })},
	{name: "QUEEN_PROXY_BROKER_AUTH", kind: "one of none, jwt", def: "none", doc: "how the proxy authenticates to the brokers: none (they trust the network), or jwt (a short-lived token on each request, signed with QUEEN_PROXY_BROKER_JWT_KEY)", set: func(c *Config, v string) error {
		if v != "none" && v != "jwt" {
			return fmt.Errorf("%q is not none or jwt", v)
		}
		c.BrokerAuth = v
		return nil
	}},
	{name: "QUEEN_PROXY_BROKER_JWT_KEY", kind: "PEM private key or at least 32 bytes", fallback: "JWT_SECRET", secret: true, doc: "the key that signs the tokens sent to the brokers: a PEM private key (Ed25519, RSA of at least 2048 bits) or an HS256 secret", set: func(c *Config, v string) (err error) {
		if v == "" {
			return nil
		}
		c.BrokerJWTKey, err = parseSigningKey(v)
		return err
	}},
	{name: "QUEEN_PROXY_BROKER_JWT_ISSUER", doc: "the iss of those tokens (the brokers' JWT_ISSUER)", kind: "string", def: "queen-proxy", set: func(c *Config, v string) error { c.BrokerJWTIssuer = v; return nil }},
	{name: "QUEEN_PROXY_BROKER_JWT_AUDIENCE", doc: "the aud of those tokens (the brokers' JWT_AUDIENCE)", kind: "string", def: "queen", set: func(c *Config, v string) error { c.BrokerJWTAudience = v; return nil }},
	{name: "QUEEN_PROXY_BROKER_JWT_TTL", doc: "the lifetime of those tokens", def: "5m", value: durationValue(time.Minute, time.Hour, func(c *Config) *time.Duration { return &c.BrokerJWTTTL })},
	{name: "QUEEN_PROXY_BROKER_ROLE_ADMIN", doc: "the broker role of admin keys and admin users", kind: "string", def: "admin", set: func(c *Config, v string) error { c.BrokerRoleAdmin = v; return nil }},
	{name: "QUEEN_PROXY_BROKER_ROLE_READ_WRITE", doc: "the broker role of write keys", kind: "string", def: "read-write", set: func(c *Config, v string) error { c.BrokerRoleReadWrite = v; return nil }},
	{name: "QUEEN_PROXY_BROKER_ROLE_READ_ONLY", doc: "the broker role of read keys", kind: "string", def: "read-only", set: func(c *Config, v string) error { c.BrokerRoleReadOnly = v; return nil }},
	{name: "QUEEN_PROXY_BROKER_ROLE_WRITE_ONLY", kind: "string", def: "write-only", doc: "the broker role of push keys", set: func(c *Config, v string) error { c.BrokerRoleWriteOnly = v; return nil }},
	{name: "QUEEN_PROXY_ADMIN_TOKEN", kind: "at least 32 characters", secret: true, doc: "bearer token of the admin API; unset, the admin API takes only the sessions of admin users", set: func(c *Config, v string) error { c.AdminToken = v; return nil }},
	{name: "QUEEN_PROXY_LOGIN", doc: "browser sign-in to the dashboard through the proxy; needs QUEEN_PROXY_SESSION_KEY", def: "true", value: boolValue(func(c *Config) *bool { return &c.Login })},
	{name: "QUEEN_PROXY_SESSION_KEY", doc: "the HS256 key that signs sign-in sessions", kind: "at least 32 bytes", secret: true, set: func(c *Config, v string) error { c.SessionKey = v; return nil }},
	{name: "QUEEN_PROXY_SESSION_TTL", doc: "the lifetime of a sign-in session", def: "24h", value: durationValue(time.Minute, 30*24*time.Hour, func(c *Config) *time.Duration { return &c.SessionTTL })},
	{name: "QUEEN_PROXY_TLS_CERT_FILE", kind: "path of a PEM file", credentialIsPath: true, doc: "certificate chain of the public listener (HTTPS); a path, or a credential of that name", set: func(c *Config, v string) error { c.TLSCertFile = v; return nil }},
	{name: "QUEEN_PROXY_TLS_KEY_FILE", kind: "path of a PEM file", credentialIsPath: true, doc: "the certificate's key; a path, or a credential of that name", set: func(c *Config, v string) error { c.TLSKeyFile = v; return nil }},
	{name: "QUEEN_PROXY_TRUSTED_PROXIES", kind: "comma-separated CIDRs", doc: "CIDRs allowed to set X-Forwarded-*", set: func(c *Config, v string) error {
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
	{name: "QUEEN_PROXY_CORS_ALLOWED_ORIGINS", doc: "browser origins (or *) that get CORS headers; empty: CORS off", value: func(c *Config) envvalue.Value {
		return envvalue.List{P: &c.CORSAllowedOrigins, Check: envvalue.CheckOrigin}
	}},
	{name: "QUEEN_PROXY_MAX_BODY_BYTES", doc: "largest request body (413 above it); a tenant's limits.maxRequestBytes can only lower it", def: "16777216", value: func(c *Config) envvalue.Value {
		return envvalue.Int[int64]{P: &c.MaxBodyBytes, Min: 1024, Max: 1 << 30}
	}},
	{name: "QUEEN_PROXY_MAX_POP_TIMEOUT", doc: "longest wait of a long-poll pop: a longer timeout is cut to it (a pop naming none waits 30 s), and the broker gets the pop with that timeout", def: "120s", value: durationValue(time.Second, time.Hour, func(c *Config) *time.Duration { return &c.MaxPopTimeout })},
	{name: "QUEEN_PROXY_UPSTREAM_TIMEOUT", doc: "how long any other request may wait for its broker (504 after it)", def: "60s", value: durationValue(time.Second, time.Hour, func(c *Config) *time.Duration { return &c.BackendTimeout })},
	{name: "QUEEN_PROXY_UPSTREAM_CHECK_INTERVAL", doc: "how often each broker's health is checked", def: "2s", value: durationValue(100*time.Millisecond, time.Minute, func(c *Config) *time.Duration { return &c.BackendCheckInterval })},
	{name: "QUEEN_PROXY_AUTH_CACHE_TTL", doc: "how long a key or session read from the proxy database is trusted before it is read again: a revoked key can work this long on a replica that has it cached", def: "5s", value: durationValue(100*time.Millisecond, 10*time.Minute, func(c *Config) *time.Duration { return &c.AuthCacheTTL })},
	{name: "QUEEN_PROXY_LIMITER_SYNC_INTERVAL", doc: "how often replicas exchange their shares of each tenant's rate limits", def: "1s", value: durationValue(50*time.Millisecond, time.Minute, func(c *Config) *time.Duration { return &c.LimiterSyncInterval })},
	{name: "QUEEN_PROXY_USAGE_REFRESH", doc: "how often the brokers' usage snapshot (what each tenant stores, which quotas decide on) is read", def: "30s", value: durationValue(100*time.Millisecond, time.Hour, func(c *Config) *time.Duration { return &c.UsageRefresh })},
	{name: "QUEEN_PROXY_USAGE_FLUSH_INTERVAL", doc: "how often the metering counters are written to the proxy database", def: "10s", value: durationValue(100*time.Millisecond, time.Minute, func(c *Config) *time.Duration { return &c.UsageFlushInterval })},
	{name: "QUEEN_PROXY_QUOTA_FAIL_CLOSED", doc: "when the usage snapshot is older than five QUEEN_PROXY_USAGE_REFRESH intervals: true refuses what quotas check (503), false admits it", def: "false", value: boolValue(func(c *Config) *bool { return &c.QuotaFailClosed })},
	{name: "QUEEN_PROXY_SHUTDOWN_TIMEOUT", doc: "on SIGTERM, how long the listeners drain before the requests still running are cut", def: "20s", value: durationValue(0, 10*time.Minute, func(c *Config) *time.Duration { return &c.ShutdownTimeout })},
	{name: "QUEEN_PROXY_SHUTDOWN_DELAY", def: "0s", doc: "on SIGTERM, how long to keep serving with /health/ready at 503 before draining; less than QUEEN_PROXY_SHUTDOWN_TIMEOUT",
		value: durationValue(0, 10*time.Minute, func(c *Config) *time.Duration { return &c.ShutdownDelay })},
	{name: "LOG_LEVEL", kind: "one of trace, debug, info, warn, error", def: "info", doc: "the log level; trace logs as debug, as at the broker", set: func(c *Config, v string) error {
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
	{name: "QUEEN_PROXY_LOG_FORMAT", kind: "one of json, text", def: "json", doc: "the log format", set: func(c *Config, v string) error {
		if v != "json" && v != "text" {
			return fmt.Errorf("%q is not json or text", v)
		}
		c.LogFormat = v
		return nil
	}},
	{name: "QUEEN_PROXY_INSTANCE", kind: "string", doc: "name of this replica (default: the host name)", set: func(c *Config, v string) error { c.Instance = v; return nil }},
}

// boolValue binds a boolean in systemd's vocabulary.
func boolValue(field func(*Config) *bool) func(*Config) envvalue.Value {
	return func(c *Config) envvalue.Value { return envvalue.Bool{P: field(c)} }
}

// durationValue binds a Go duration from lo to hi.
func durationValue(lo, hi time.Duration, field func(*Config) *time.Duration) func(*Config) envvalue.Value {
	return func(c *Config) envvalue.Value { return envvalue.Range{P: field(c), Min: lo, Max: hi} }
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
func millis(field func(*Config) *time.Duration) func(*Config) envvalue.Value {
	return func(c *Config) envvalue.Value {
		return envvalue.Unit{P: field(c), Unit: time.Millisecond, Min: 1, Max: 3_600_000}
	}
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
