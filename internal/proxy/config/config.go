package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/envvalue"
)

// Config is the effective configuration of one queen-proxy process. Components
// receive the fields they need, never the whole struct as a global.
type Config struct {
	// Host and Port are the public listener's address, unless systemd passes a socket.
	Host string
	Port int
	// AdminListen is the admin API's host:port (loopback by default).
	AdminListen string
	// Backends are the brokers' base URLs (QUEEN_PROXY_UPSTREAMS).
	Backends []*url.URL
	// TenancyHeader is the header that carries the tenant id to the brokers; it must be
	// the brokers' QUEEN_TENANCY_HEADER.
	TenancyHeader string

	// PG* and DB* say how to reach the proxy's own database.
	PGHost, PGPort, PGUser, PGPassword, PGDB string
	PGUseSSL                                 bool
	// PGSSLRejectUnauthorized, with PGUseSSL, verifies the server's certificate
	// (sslmode=verify-full); false only encrypts (require), as on the broker.
	PGSSLRejectUnauthorized bool
	// PGSSLRootCert, PGSSLCert and PGSSLKey are file paths: the trust anchors for the
	// server's certificate (empty: the system's) and the proxy's client certificate.
	PGSSLRootCert, PGSSLCert, PGSSLKey string
	// PGTargetSessionAttrs is libpq's target_session_attrs: read-write, primary or any.
	PGTargetSessionAttrs                    string
	DBPoolSize                              int
	DBConnectionTimeout, DBStatementTimeout time.Duration

	// BrokerAuth is "none" (the tenancy header only) or "jwt" (a minted token per
	// principal as well).
	BrokerAuth string
	// BrokerJWTKey is the signing key with BrokerAuth "jwt": ed25519.PrivateKey,
	// *rsa.PrivateKey or []byte (HS256).
	BrokerJWTKey                       any
	BrokerJWTIssuer, BrokerJWTAudience string
	BrokerJWTTTL                       time.Duration
	// BrokerRole* are the broker role values minted for each key scope (admin,
	// write, read, push) and, admin, for the proxy itself.
	BrokerRoleAdmin, BrokerRoleReadWrite    string
	BrokerRoleReadOnly, BrokerRoleWriteOnly string

	// AdminToken authenticates the admin API; "" leaves only operator sessions.
	AdminToken string
	// Login serves the login routes; SessionKey signs their sessions.
	Login      bool
	SessionKey string
	SessionTTL time.Duration

	// TLSCertFile and TLSKeyFile turn TLS on for the public listener (both or neither).
	TLSCertFile, TLSKeyFile string
	// TrustedProxies may set X-Forwarded-For; CORSAllowedOrigins turns CORS on.
	TrustedProxies     []netip.Prefix
	CORSAllowedOrigins []string

	MaxBodyBytes         int64
	MaxPopTimeout        time.Duration
	BackendTimeout       time.Duration
	BackendCheckInterval time.Duration
	AuthCacheTTL         time.Duration
	LimiterSyncInterval  time.Duration
	UsageRefresh         time.Duration
	UsageFlushInterval   time.Duration
	QuotaFailClosed      bool
	ShutdownTimeout      time.Duration
	// ShutdownDelay is how long a stop keeps serving, not ready, before it drains.
	ShutdownDelay time.Duration

	LogLevel  slog.Level
	LogFormat string
	// Instance names this process in logs and the replicas table ("" = hostname).
	Instance string

	// sources says where each setting came from, for Print.
	sources map[string]string
	values  map[string]string
}

// Load reads the configuration from environ (NAME=value entries; the first
// occurrence of a name wins). It returns every invalid setting at once, joined, each
// an *Error naming its variable.
func Load(environ []string) (*Config, error) { return load(environ, nil) }

// LoadOnly is Load for a command that needs only the settings named (the management
// commands need the database's, DatabaseSettings): it reads and checks those alone,
// so that a setting only the server needs (QUEEN_PROXY_SESSION_KEY while login is on)
// cannot stop it. The other fields keep their zero values.
func LoadOnly(environ []string, names ...string) (*Config, error) {
	only := map[string]bool{}
	for _, n := range names {
		only[n] = true
	}
	return load(environ, only)
}

// DatabaseSettings are the settings of the proxy database.
func DatabaseSettings() []string {
	return []string{"PG_HOST", "PG_PORT", "PG_USER", "PG_PASSWORD", "PG_DB", "PG_USE_SSL",
		"PG_SSL_REJECT_UNAUTHORIZED", "PG_SSL_ROOT_CERT", "PG_SSL_CERT", "PG_SSL_KEY", "PG_TARGET_SESSION_ATTRS",
		"DB_CONNECTION_TIMEOUT", "DB_STATEMENT_TIMEOUT"}
}

// BrokerSettings are the settings of the proxy's own calls to the brokers of the
// default cell.
func BrokerSettings() []string {
	return []string{"QUEEN_PROXY_UPSTREAMS", "QUEEN_TENANCY_HEADER", "QUEEN_PROXY_BROKER_AUTH",
		"QUEEN_PROXY_BROKER_JWT_KEY", "QUEEN_PROXY_BROKER_JWT_ISSUER", "QUEEN_PROXY_BROKER_JWT_AUDIENCE",
		"QUEEN_PROXY_BROKER_JWT_TTL", "QUEEN_PROXY_BROKER_ROLE_ADMIN"}
}

// load is Load for every setting (only nil) or only those in only, whose checks of
// combinations are kept only when they name one of them; unknown variables are
// refused only when every setting is read.
func load(environ []string, only map[string]bool) (*Config, error) {
	env := map[string]string{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if _, seen := env[name]; ok && !seen {
			env[name] = value
		}
	}
	c := &Config{sources: map[string]string{}, values: map[string]string{}}
	var errs []error
	known := map[string]bool{}
	for _, s := range settings {
		known[s.name] = true
		if only != nil && !only[s.name] {
			continue
		}
		raw, source := lookup(env, s)
		if v, set := env[s.name]; raw == "" && s.emptyIsValue && set && v == "" {
			source = "env"
		} else if raw == "" {
			raw, source = s.def, "default"
		}
		c.sources[s.name], c.values[s.name] = source, raw
		if err := s.apply(c, raw); err != nil {
			msg := err.Error()
			if s.secret {
				msg = "invalid value (not shown: secret)" + secretHint(err)
			}
			errs = append(errs, &Error{Var: s.name, Msg: msg})
		}
	}
	for name := range env {
		if only == nil && strings.HasPrefix(name, "QUEEN_PROXY_") && !known[name] {
			errs = append(errs, &Error{Var: name, Msg: "unknown variable" + suggest(name)})
		}
	}
	for _, err := range c.validate() {
		if e := (*Error)(nil); only == nil || errors.As(err, &e) && only[e.Var] {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// lookup returns a setting's raw value and its source: the environment, then the
// fallback variable, then (secrets) a file of the same name in the credentials
// directory.
func lookup(env map[string]string, s setting) (string, string) {
	if v := env[s.name]; v != "" {
		return v, "env"
	}
	if s.fallback != "" && env[s.fallback] != "" {
		return env[s.fallback], "env " + s.fallback
	}
	if dir := env["CREDENTIALS_DIRECTORY"]; (s.secret || s.credentialIsPath) && dir != "" {
		path := filepath.Join(dir, s.name)
		if s.credentialIsPath {
			if _, err := os.Stat(path); err == nil {
				return path, "credential"
			}
		} else if b, err := os.ReadFile(path); err == nil {
			return strings.TrimRight(string(b), "\r\n"), "credential"
		}
	}
	return "", ""
}

// secretHint keeps the kind of a secret's problem without its value.
func secretHint(err error) string {
	var h hintError
	if errors.As(err, &h) {
		return ": " + string(h)
	}
	return ""
}

// hintError is a problem with a secret that is safe to print.
type hintError string

func (h hintError) Error() string { return string(h) }

// validate checks combinations of settings.
func (c *Config) validate() []error {
	var errs []error
	add := func(name, msg string) { errs = append(errs, &Error{Var: name, Msg: msg}) }
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		add("QUEEN_PROXY_TLS_CERT_FILE", "QUEEN_PROXY_TLS_CERT_FILE and QUEEN_PROXY_TLS_KEY_FILE go together")
	}
	if c.BrokerAuth == "jwt" && c.BrokerJWTKey == nil {
		add("QUEEN_PROXY_BROKER_JWT_KEY", "required with QUEEN_PROXY_BROKER_AUTH=jwt")
	}
	if c.Login {
		switch {
		case c.SessionKey == "":
			add("QUEEN_PROXY_SESSION_KEY", "required while QUEEN_PROXY_LOGIN is on")
		case len(c.SessionKey) < 32:
			add("QUEEN_PROXY_SESSION_KEY", "must be at least 32 bytes")
		}
	}
	if hs, ok := c.BrokerJWTKey.([]byte); ok && c.SessionKey != "" && string(hs) == c.SessionKey {
		add("QUEEN_PROXY_SESSION_KEY", "must differ from the broker key QUEEN_PROXY_BROKER_JWT_KEY")
	}
	if c.AdminToken != "" && len(c.AdminToken) < 32 {
		add("QUEEN_PROXY_ADMIN_TOKEN", "must be at least 32 characters")
	}
	if c.ShutdownDelay > 0 && c.ShutdownDelay >= c.ShutdownTimeout {
		add("QUEEN_PROXY_SHUTDOWN_DELAY", "must be less than QUEEN_PROXY_SHUTDOWN_TIMEOUT")
	}
	return errs
}

// PGConnString is the proxy database's connection string.
func (c *Config) PGConnString() string {
	u := url.URL{Scheme: "postgres", Host: c.PGHost + ":" + c.PGPort, Path: "/" + c.PGDB}
	if c.PGPassword != "" {
		u.User = url.UserPassword(c.PGUser, c.PGPassword)
	} else {
		u.User = url.User(c.PGUser)
	}
	q := url.Values{}
	q.Set("sslmode", c.PGSSLMode())
	for k, v := range map[string]string{"sslrootcert": c.PGSSLRootCert, "sslcert": c.PGSSLCert, "sslkey": c.PGSSLKey} {
		if v != "" && c.PGUseSSL {
			q.Set(k, v)
		}
	}
	q.Set("target_session_attrs", c.PGTargetSessionAttrs)
	// Whole seconds, rounded up as the broker does (2500 ms is 3 s, never 2).
	q.Set("connect_timeout", fmt.Sprint(max(1, int64((c.DBConnectionTimeout+time.Second-1)/time.Second))))
	q.Set("application_name", "queen-proxy")
	u.RawQuery = q.Encode()
	return u.String()
}

// PGSSLMode is the libpq sslmode of the proxy database, as the broker's
// (envvalue.PGSSLMode).
func (c *Config) PGSSLMode() string {
	return envvalue.PGSSLMode(c.PGUseSSL, c.PGSSLRejectUnauthorized)
}

// TLS reports whether the public listener serves TLS.
func (c *Config) TLS() bool { return c.TLSCertFile != "" }
