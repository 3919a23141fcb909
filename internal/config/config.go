// Package config turns the process environment into a validated *Config.
//
// One table of settings (settings*.go) drives parsing, printing, the startup log block
// and docs/configuration.md, so the four cannot drift apart. Variable names and
// defaults are upstream Queen's, so existing env files keep working;
// the parsing is stricter than upstream's: a malformed boolean, integer, enum or key is
// an error naming the variable and its value, never a silent 0 or false. Load collects
// every problem before it returns, and every one of them matches ErrInvalid, which the
// daemon maps to exit status 78 (EX_CONFIG).
//
// Nothing in queen outside this package reads the environment.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// Where a setting's value came from, as reported by Source, Print and LogAttrs.
const (
	SourceDefault    = "default"
	SourceEnv        = "env"
	SourceCredential = "credential"
	SourceFlag       = "flag" // a command-line flag of the broker (--port, --host, --dev)
)

// credentialsDirVar names the directory systemd fills from LoadCredential=.
const credentialsDirVar = "CREDENTIALS_DIRECTORY"

// Config is queen's effective configuration. Build it with Load; the zero value is not
// useful. Fields are grouped as in docs/configuration.md, and each field's comment names
// the variable it comes from. Durations that upstream writes in milliseconds or seconds
// keep their upstream integer variables but are exposed as time.Duration.
type Config struct {
	// Server.
	Host               string        // HOST: HTTP bind address.
	Port               int           // PORT: HTTP port.
	Instance           string        // QUEEN_INSTANCE: replica name under queen@.service, "" otherwise.
	ShutdownTimeout    time.Duration // QUEEN_SHUTDOWN_TIMEOUT: drain budget after SIGTERM.
	ShutdownDelay      time.Duration // QUEEN_SHUTDOWN_DELAY: serve while not ready before draining.
	ReadTimeout        time.Duration // QUEEN_READ_TIMEOUT: whole-request read limit, 0 = none.
	TenancyHeader      string        // QUEEN_TENANCY_HEADER: tenant header name ("true": X-Queen-Tenant), "" = tenancy off.
	WebappRoot         string        // WEBAPP_ROOT: dashboard directory; "" serves the embedded one.
	DashboardEnabled   bool          // false when WEBAPP_ROOT is set but empty.
	CORSAllowedOrigins []string      // CORS_ALLOWED_ORIGINS: empty means CORS off.
	PprofAddr          string        // QUEEN_PPROF_ADDR: profiling listener host:port, "" = off.
	GCPercent          int           // GOGC: the Go garbage collector's target, -1 = off.
	MemoryLimit        int64         // GOMEMLIMIT: the Go runtime's soft memory limit in bytes, math.MaxInt64 = off.
	EnvFiles           []string      // QUEEN_ENV_FILES: env files a reload (SIGHUP) re-reads.

	// TenancyUsageInterval (QUEEN_TENANCY_USAGE_INTERVAL) paces the per-tenant usage job.
	TenancyUsageInterval time.Duration

	// PostgreSQL.
	PGHost                  string        // PG_HOST
	PGPort                  string        // PG_PORT, numeric
	PGDB                    string        // PG_DATABASE when set, else PG_DB: the database connected to.
	PGDatabase              string        // PG_DATABASE: the 1.x name, "" when unset.
	ApplySchema             bool          // QUEEN_APPLY_SCHEMA: false runs no DDL, only checks the schema.
	PGUser                  string        // PG_USER
	PGPassword              string        // PG_PASSWORD (secret)
	PGUseSSL                bool          // PG_USE_SSL
	PGSSLRejectUnauthorized bool          // PG_SSL_REJECT_UNAUTHORIZED
	PGTargetSessionAttrs    string        // PG_TARGET_SESSION_ATTRS: read-write, primary or any.
	PGSSLRootCert           string        // PG_SSL_ROOT_CERT: PEM text or a file path, as given.
	PGSSLCert               string        // PG_SSL_CERT: PEM text or a file path, as given.
	PGSSLKey                string        // PG_SSL_KEY (secret): PEM text or a file path, as given.
	DBPoolSize              int           // DB_POOL_SIZE: maximum connections, opened lazily.
	DBConnectionTimeout     time.Duration // DB_CONNECTION_TIMEOUT (ms)
	DBStatementTimeout      time.Duration // DB_STATEMENT_TIMEOUT (ms), 0 = none
	DBLockTimeout           time.Duration // DB_LOCK_TIMEOUT (ms), 0 = none
	DBIdleTimeout           time.Duration // DB_IDLE_TIMEOUT (ms): idle_in_transaction_session_timeout.
	DBTCPUserTimeout        time.Duration // DB_TCP_USER_TIMEOUT_MS
	DBInflightDeadline      time.Duration // LIBQUEEN_INFLIGHT_DEADLINE_MS (ms), 0 = derived; see InflightDeadline
	DBCommitStall           time.Duration // QUEEN_DB_COMMIT_STALL_MS (ms), 0 = off
	DBKeepalivesIdle        time.Duration // DB_KEEPALIVES_IDLE (s)
	DBKeepalivesInterval    time.Duration // DB_KEEPALIVES_INTERVAL (s)
	DBKeepalivesCount       int           // DB_KEEPALIVES_COUNT

	// Pop and long-poll.
	DefaultTimeout           time.Duration // DEFAULT_TIMEOUT (ms)
	DefaultBatchSize         int           // DEFAULT_BATCH_SIZE
	PopAutopilotBatch        int           // QUEEN_POP_AUTOPILOT_BATCH
	DefaultSubscriptionMode  string        // DEFAULT_SUBSCRIPTION_MODE: "" or "all" (both: all messages), or "new" (and its 1.x spellings).
	PopWaitInitialInterval   time.Duration // POP_WAIT_INITIAL_INTERVAL_MS
	PopWaitBackoffThreshold  int           // POP_WAIT_BACKOFF_THRESHOLD
	PopWaitBackoffMultiplier float64       // POP_WAIT_BACKOFF_MULTIPLIER
	PopWaitMaxInterval       time.Duration // POP_WAIT_MAX_INTERVAL_MS
	MaxPopTimeout            time.Duration // QUEEN_MAX_POP_TIMEOUT_MS: cap on any long-poll timeout.
	PopSynchronousCommit     bool          // QUEEN_POP_SYNCHRONOUS_COMMIT: false lets plain pops commit without waiting for the flush.
	PopClaimAhead            time.Duration // QUEEN_POP_CLAIM_AHEAD_MS: how long a batch an ack claimed ahead waits for its pop; 0 = off.

	// Push batching (upstream's engine names; 0 counts as 1, as upstream).
	PushMaxConcurrent  int           // QUEEN_PUSH_MAX_CONCURRENT: push statements at once.
	PushMaxBatchSize   int           // QUEEN_PUSH_MAX_BATCH_SIZE: pushes per statement.
	PushPreferredBatch int           // QUEEN_PUSH_PREFERRED_BATCH_SIZE
	PushParallelMin    int           // QUEEN_PUSH_PARALLEL_MIN_MESSAGES
	PushMaxHold        time.Duration // QUEEN_PUSH_MAX_HOLD_MS

	// Request limits.
	MaxBodyBytes int64 // QUEEN_MAX_BODY_BYTES
	MaxPushItems int   // QUEEN_MAX_PUSH_ITEMS
	MaxPopBatch  int   // QUEEN_MAX_POP_BATCH
	MaxAckItems  int   // QUEEN_MAX_ACK_ITEMS

	// Logging.
	LogLevel  string // LOG_LEVEL: trace, debug, info, warn or error.
	LogFormat string // QUEEN_LOG_FORMAT: json or text.
	// QUEEN_STATS_LOG_INTERVAL: period of the "rates and sizes" log line, 0 = off.
	StatsLogInterval time.Duration

	// File buffer (spool).
	FileBufferDir           string        // FILE_BUFFER_DIR
	FileBufferFlushInterval time.Duration // FILE_BUFFER_FLUSH_MS
	FileBufferMaxBatch      int           // FILE_BUFFER_MAX_BATCH
	FileBufferEventsPerFile int           // FILE_BUFFER_EVENTS_PER_FILE
	SpoolMaxBytes           int64         // QUEEN_SPOOL_MAX_BYTES, 0 = no limit but the disk

	// Maintenance, retention, stats and metrics jobs.
	RetentionInterval                time.Duration // RETENTION_INTERVAL (ms)
	RetentionBatchSize               int           // RETENTION_BATCH_SIZE
	PartitionCleanupDays             int           // PARTITION_CLEANUP_DAYS
	MetricsRetentionDays             int           // METRICS_RETENTION_DAYS
	DLQRetentionDays                 int           // DLQ_RETENTION_DAYS, 0 = off
	EvictionInterval                 time.Duration // EVICTION_INTERVAL (ms)
	EvictionBatchSize                int           // EVICTION_BATCH_SIZE
	PartitionLookupReconcileInterval time.Duration // PARTITION_LOOKUP_RECONCILE_INTERVAL_MS
	PartitionLookupReconcileLookback time.Duration // PARTITION_LOOKUP_RECONCILE_LOOKBACK_SECONDS
	AnalyticsFlushInterval           time.Duration // QUEEN_ANALYTICS_FLUSH_INTERVAL: 1s..1m
	AnalyticsBucket                  time.Duration // QUEEN_ANALYTICS_BUCKET: divides a minute, 1s..1m
	AnalyzeInterval                  time.Duration // QUEEN_ANALYZE_INTERVAL: 0 = off, else >= 1s

	// Authentication (JWT).
	JWTEnabled             bool          // JWT_ENABLED
	JWTAlgorithm           string        // JWT_ALGORITHM: one of auth.Algorithms().
	JWTSecret              string        // JWT_SECRET (secret)
	JWTJWKSURL             string        // JWT_JWKS_URL
	JWTPublicKey           string        // JWT_PUBLIC_KEY, PEM
	JWTIssuer              string        // JWT_ISSUER
	JWTAudience            string        // JWT_AUDIENCE
	JWTClockSkew           time.Duration // JWT_CLOCK_SKEW (s)
	JWTSkipPaths           []string      // JWT_SKIP_PATHS
	JWTJWKSRefreshInterval time.Duration // JWT_JWKS_REFRESH_INTERVAL (s)
	JWTJWKSTimeout         time.Duration // JWT_JWKS_TIMEOUT_MS
	JWTRolesClaim          string        // JWT_ROLES_CLAIM
	JWTRolesArrayClaim     string        // JWT_ROLES_ARRAY_CLAIM
	JWTRoleAdmin           string        // JWT_ROLE_ADMIN
	JWTRoleReadWrite       string        // JWT_ROLE_READ_WRITE
	JWTRoleReadOnly        string        // JWT_ROLE_READ_ONLY
	JWTRoleWriteOnly       string        // JWT_ROLE_WRITE_ONLY

	// Encryption.
	EncryptionKey []byte // QUEEN_ENCRYPTION_KEY: 32 bytes, or nil when encryption is off.

	// Tracing holds the standard OpenTelemetry variables (OTEL_*) of the span exporter.
	Tracing Tracing

	sources  map[string]string
	warnings []string
	unknown  []UnknownVariable
	environ  []string // as given to Load, for a reload
	pgTLS    pgTLSMaterial

	pgDBLegacy string // PG_DB as given; PGDB is what wins of it and PG_DATABASE
}

// Load builds the configuration from environ, a list of KEY=value strings as returned
// by os.Environ (the first occurrence of a key wins, as with os.Getenv). Unset and
// set-but-empty variables take their defaults (a few documented ones treat empty as a
// value). Secrets are read from $CREDENTIALS_DIRECTORY first. Load reports every
// problem at once: the returned error joins one *Error per problem and matches
// ErrInvalid. On error the returned *Config is nil. Unknown QUEEN_* variables are not
// errors: they are listed by UnknownVariables.
func Load(environ []string) (*Config, error) {
	env := environMap(environ)
	c := &Config{sources: make(map[string]string), environ: slices.Clone(environ)}
	credDir := env[credentialsDirVar]
	failed := make(map[string]bool)
	var errs []error
	for _, s := range table() {
		v := s.bind(c)
		if r, ok := v.(resetter); ok {
			r.Reset()
		} else if err := v.Set(s.def); err != nil {
			panic(fmt.Sprintf("config: default of %s: %v", s.name, err)) // the table is wrong
		}
		c.sources[s.name] = SourceDefault
		raw, src, err := c.lookup(s, env, credDir)
		if err != nil {
			errs, failed[s.name] = append(errs, err), true
			continue
		}
		if src == SourceDefault {
			continue
		}
		if err := v.Set(raw); err != nil {
			errs, failed[s.name] = append(errs, s.problem(raw, err.Error())), true
			continue
		}
		c.sources[s.name] = src
	}
	c.resolveDatabase()
	c.checkForeign(env, credDir)
	c.warnings = append(c.warnings, c.compat1xWarnings(env)...)
	c.warnings = append(c.warnings, c.inflightWarnings()...)
	for _, p := range c.problems() {
		if !p.involves(failed) {
			errs = append(errs, p)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	c.warnings = append(c.warnings, c.pgTLSWarnings()...)
	c.warnings = append(c.warnings, c.unusedWarnings()...)
	sort.Strings(c.warnings)
	return c, nil
}

// lookup finds a setting's raw value: a credential file wins over the environment, and
// an empty value counts as unset unless the setting gives empty a meaning.
func (c *Config) lookup(s setting, env map[string]string, credDir string) (raw, src string, err error) {
	envRaw, inEnv := env[s.name]
	inEnv = inEnv && (envRaw != "" || s.emptyOK)
	if (s.secret || s.credential) && credDir != "" {
		cred, ok, err := readCredential(credDir, s.name)
		if err != nil {
			return "", "", &Error{Name: s.name, Value: redacted, Reason: err.Error()}
		}
		if ok && (cred != "" || s.emptyOK) {
			if inEnv {
				c.warnings = append(c.warnings, s.name+
					" is set both in the environment and as a credential; the credential wins")
			}
			return cred, SourceCredential, nil
		}
	}
	if inEnv {
		return envRaw, SourceEnv, nil
	}
	return "", SourceDefault, nil
}

// readCredential reads $CREDENTIALS_DIRECTORY/name with trailing newlines trimmed.
// A missing file is not an error.
func readCredential(dir, name string) (string, bool, error) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("read credential: %w", err)
	}
	return strings.TrimRight(string(data), "\r\n"), true, nil
}

// environMap indexes KEY=value strings; the first occurrence of a key wins.
func environMap(environ []string) map[string]string {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if _, dup := env[k]; !dup {
			env[k] = v
		}
	}
	return env
}

// SetByFlag records that the environment values of the named settings came from the
// command line: the broker's flags set their variables over the environment before
// Load, and Source then reports SourceFlag for them.
func (c *Config) SetByFlag(names ...string) {
	for _, n := range names {
		if c.sources[n] == SourceEnv {
			c.sources[n] = SourceFlag
		}
	}
}

// Source reports where the named setting's value came from: SourceDefault, SourceEnv,
// SourceCredential or SourceFlag; "" for a name that is not a setting.
func (c *Config) Source(name string) string {
	if _, ok := settingByName(name); !ok {
		return ""
	}
	if src, ok := c.sources[name]; ok {
		return src
	}
	return SourceDefault
}

// Warnings lists, sorted, what Load accepted but the operator should know: upstream
// variables that are set but change nothing in this broker, settings that another
// setting's value leaves unused, and secrets given twice.
// The daemon logs them at startup; `queen -check-config` prints them.
func (c *Config) Warnings() []string {
	return append([]string(nil), c.warnings...)
}
