package config

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// loadErr loads environ, requires it to fail with ErrInvalid, and returns the message.
func loadErr(t *testing.T, environ ...string) string {
	t.Helper()
	c, err := Load(environ)
	require.ErrorIs(t, err, ErrInvalid)
	require.Nil(t, c)
	return err.Error()
}

// mustLoad loads environ and requires it to succeed.
func mustLoad(t *testing.T, environ ...string) *Config {
	t.Helper()
	c, err := Load(environ)
	require.NoError(t, err)
	return c
}

func TestLoadDefaults(t *testing.T) {
	t.Parallel()

	c := mustLoad(t)
	require.Equal(t, "0.0.0.0", c.Host)
	require.Equal(t, 6632, c.Port)
	require.Equal(t, "localhost", c.PGHost)
	require.Equal(t, "5432", c.PGPort)
	require.Equal(t, "postgres", c.PGPassword)
	require.False(t, c.PGUseSSL)
	require.True(t, c.PGSSLRejectUnauthorized)
	require.Equal(t, 150, c.DBPoolSize)
	require.Equal(t, 2*time.Second, c.DBConnectionTimeout)
	require.Equal(t, 60*time.Second, c.DBKeepalivesIdle)
	require.Equal(t, 30*time.Second, c.DefaultTimeout)
	require.Equal(t, 2.0, c.PopWaitBackoffMultiplier)
	require.Equal(t, 120*time.Second, c.MaxPopTimeout)
	require.Equal(t, int64(16<<20), c.MaxBodyBytes)
	require.Equal(t, 20*time.Second, c.ShutdownTimeout)
	require.Equal(t, time.Minute, c.ReadTimeout)
	require.Empty(t, c.TenancyHeader, "tenancy is off by default")
	require.Equal(t, 30*time.Second, c.TenancyUsageInterval)
	require.Equal(t, time.Minute, c.AnalyticsFlushInterval)
	require.Equal(t, time.Minute, c.AnalyticsBucket)
	require.Equal(t, "info", c.LogLevel)
	require.Equal(t, "json", c.LogFormat)
	require.Equal(t, "/var/lib/queen/buffers", c.FileBufferDir)
	require.Equal(t, 5*time.Minute, c.RetentionInterval)
	require.Equal(t, "HS256", c.JWTAlgorithm)
	require.Equal(t, []string{"/health", "/metrics/prometheus", "/metrics", "/"}, c.JWTSkipPaths)
	require.Equal(t, time.Hour, c.JWTJWKSRefreshInterval)
	require.Nil(t, c.EncryptionKey)
	require.Empty(t, c.CORSAllowedOrigins)
	require.True(t, c.DashboardEnabled)
	require.Empty(t, c.Warnings())
	for _, s := range table() {
		require.Equal(t, SourceDefault, c.Source(s.name), s.name)
	}
	require.Empty(t, c.Source("NOT_A_SETTING"))
}

func TestLoadBooleans(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name, raw string
		want      bool
	}{
		{"True", "true", true}, {"TrueUpper", "TRUE", true}, {"TrueMixed", "True", true},
		{"One", "1", true}, {"Yes", "yes", true}, {"YesUpper", "YES", true},
		{"On", "on", true}, {"OnMixed", "On", true},
		{"False", "false", false}, {"FalseUpper", "FALSE", false}, {"Zero", "0", false},
		{"No", "no", false}, {"Off", "off", false}, {"OffUpper", "OFF", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// PG_SSL_REJECT_UNAUTHORIZED defaults to true, so false values are visible too.
			c := mustLoad(t, "PG_USE_SSL="+tc.raw, "PG_SSL_REJECT_UNAUTHORIZED="+tc.raw)
			require.Equal(t, tc.want, c.PGUseSSL)
			require.Equal(t, tc.want, c.PGSSLRejectUnauthorized)
			require.Equal(t, SourceEnv, c.Source("PG_USE_SSL"))
		})
	}
}

func TestLoadRejectsBadBooleans(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct{ name, raw string }{
		{"Typo", "ture"}, {"Enabled", "enabled"}, {"InlineComment", "yes # comment"},
		{"LeadingSpace", " true"}, {"Two", "2"}, {"Y", "y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			msg := loadErr(t, "JWT_ENABLED="+tc.raw)
			require.Contains(t, msg, `config: JWT_ENABLED=`+quote(tc.raw)+`: not a boolean`)
		})
	}
}

func TestLoadIntegers(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name, env, want string
	}{
		{"Garbage", "DB_POOL_SIZE=abc", `config: DB_POOL_SIZE="abc": not an integer`},
		{"NumericPrefix", "DB_POOL_SIZE=12abc", `config: DB_POOL_SIZE="12abc": not an integer`},
		{"Fraction", "DEFAULT_BATCH_SIZE=1.5", `config: DEFAULT_BATCH_SIZE="1.5": not an integer`},
		{"Spaces", "PORT= 80", `config: PORT=" 80": not an integer`},
		{"Overflow", "QUEEN_MAX_BODY_BYTES=99999999999999999999", `integer out of range`},
		{"BelowMinimum", "DB_POOL_SIZE=1", `config: DB_POOL_SIZE="1": must be ≥ 2`},
		{"PortTooHigh", "PORT=70000", `config: PORT="70000": must be between 1 and 65535`},
		{"PGPortNotNumeric", "PG_PORT=postgres", `config: PG_PORT="postgres": not an integer`},
		{"NegativeMillis", "DB_LOCK_TIMEOUT=-1", `config: DB_LOCK_TIMEOUT="-1": must be ≥ 0`},
		{"MillisAboveTheMax", "DB_STATEMENT_TIMEOUT=3000000000",
			`config: DB_STATEMENT_TIMEOUT="3000000000": must be between 0 and 2147483647`},
		{"KeepaliveIdleOverLinuxs", "DB_KEEPALIVES_IDLE=40000", `config: DB_KEEPALIVES_IDLE="40000": must be between 0 and 32767`},
		{"KeepaliveIntervalOverLinuxs", "DB_KEEPALIVES_INTERVAL=32768", `must be between 0 and 32767`},
		{"KeepaliveCountOverLinuxs", "DB_KEEPALIVES_COUNT=200", `config: DB_KEEPALIVES_COUNT="200": must be between 0 and 127`},
		{"ZeroFlush", "FILE_BUFFER_FLUSH_MS=0", `config: FILE_BUFFER_FLUSH_MS="0": must be ≥ 1`},
		// A day count past a hundred years would overflow the cut-off into the future.
		{"CleanupDaysPastACentury", "PARTITION_CLEANUP_DAYS=999999", `config: PARTITION_CLEANUP_DAYS="999999": must be between 1 and 36500`},
		{"MetricsDaysPastACentury", "METRICS_RETENTION_DAYS=36501", `must be between 1 and 36500`},
		{"DLQDaysPastACentury", "DLQ_RETENTION_DAYS=2147483647", `must be between 0 and 36500`},
		{"BadFloat", "POP_WAIT_BACKOFF_MULTIPLIER=fast", `config: POP_WAIT_BACKOFF_MULTIPLIER="fast": not a number`},
		{"NaN", "POP_WAIT_BACKOFF_MULTIPLIER=NaN", `not a number`},
		{"FloatBelowOne", "POP_WAIT_BACKOFF_MULTIPLIER=0.5", `must be at least 1`},
		{"BareSecondsDuration", "QUEEN_SHUTDOWN_TIMEOUT=20", `config: QUEEN_SHUTDOWN_TIMEOUT="20": not a duration`},
		{"ZeroDuration", "QUEEN_SHUTDOWN_TIMEOUT=0s", `must be at least 1ms`},
		{"LimitBelowMinimum", "QUEEN_READ_TIMEOUT=500ms", `config: QUEEN_READ_TIMEOUT="500ms": must be 0 (no limit) or at least 1s`},
		{"NegativeLimit", "QUEEN_READ_TIMEOUT=-1s", `must be 0 (no limit) or at least 1s`},
		{"BareSecondsLimit", "QUEEN_READ_TIMEOUT=60", `config: QUEEN_READ_TIMEOUT="60": not a duration`},
		{"TenancyHeaderWithSpace", "QUEEN_TENANCY_HEADER=X Queen", `config: QUEEN_TENANCY_HEADER="X Queen": a header name has only letters`},
		{"TenancyHeaderDigitFirst", "QUEEN_TENANCY_HEADER=1-Tenant", `a header name starts with a letter`},
		{"TenancyHeaderReserved", "QUEEN_TENANCY_HEADER=authorization", `Authorization is a header the broker or a proxy already uses`},
		{"TenancyHeaderForwarded", "QUEEN_TENANCY_HEADER=X-Forwarded-Tenant", `X-Forwarded-Tenant is a header proxies set`},
		{"FlushIntervalTooShort", "QUEEN_ANALYTICS_FLUSH_INTERVAL=500ms",
			`config: QUEEN_ANALYTICS_FLUSH_INTERVAL="500ms": must be from 1s to 1m0s`},
		{"FlushIntervalTooLong", "QUEEN_ANALYTICS_FLUSH_INTERVAL=2m", `must be from 1s to 1m0s`},
		{"FlushIntervalZero", "QUEEN_ANALYTICS_FLUSH_INTERVAL=0s", `must be from 1s to 1m0s`},
		{"FlushIntervalBareSeconds", "QUEEN_ANALYTICS_FLUSH_INTERVAL=5", `not a duration`},
		{"TenancyUsageIntervalTooShort", "QUEEN_TENANCY_USAGE_INTERVAL=500ms", `must be at least 1s`},
		{"BucketNotDividingAMinute", "QUEEN_ANALYTICS_BUCKET=7s",
			`config: QUEEN_ANALYTICS_BUCKET="7s": must be whole seconds that divide a minute`},
		{"BucketFractionalSeconds", "QUEEN_ANALYTICS_BUCKET=1500ms", `must be whole seconds that divide a minute`},
		{"BucketTooLong", "QUEEN_ANALYTICS_BUCKET=2m", `must be whole seconds that divide a minute`},
		{"BucketZero", "QUEEN_ANALYTICS_BUCKET=0s", `must be whole seconds that divide a minute`},
		{"BucketBareSeconds", "QUEEN_ANALYTICS_BUCKET=5", `not a duration`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Contains(t, loadErr(t, tc.env), tc.want)
		})
	}
}

func TestLoadUnits(t *testing.T) {
	t.Parallel()

	c := mustLoad(t,
		"DB_CONNECTION_TIMEOUT=2500", "DB_KEEPALIVES_IDLE=7", "JWT_CLOCK_SKEW=0",
		"QUEEN_SHUTDOWN_TIMEOUT=1m30s", "PG_PORT=05432", "POP_WAIT_BACKOFF_MULTIPLIER=1.5",
		"QUEEN_MAX_BODY_BYTES=1048576", "PARTITION_CLEANUP_DAYS=7", "QUEEN_READ_TIMEOUT=0s",
		"QUEEN_ANALYTICS_FLUSH_INTERVAL=5s", "QUEEN_TENANCY_HEADER=X-Queen-Tenant", "QUEEN_ANALYTICS_BUCKET=15s")
	require.Equal(t, "X-Queen-Tenant", c.TenancyHeader)
	require.Equal(t, 2500*time.Millisecond, c.DBConnectionTimeout)
	require.Equal(t, 7*time.Second, c.DBKeepalivesIdle)
	require.Zero(t, c.JWTClockSkew)
	require.Equal(t, 90*time.Second, c.ShutdownTimeout)
	require.Equal(t, "5432", c.PGPort)
	require.Equal(t, 1.5, c.PopWaitBackoffMultiplier)
	require.Equal(t, int64(1<<20), c.MaxBodyBytes)
	require.Equal(t, 7, c.PartitionCleanupDays)
	require.Zero(t, c.ReadTimeout, "0s: no read limit")
	require.Equal(t, 5*time.Second, c.AnalyticsFlushInterval)
	require.Equal(t, 15*time.Second, c.AnalyticsBucket)
}

func TestLoadEmptyMeansDefault(t *testing.T) {
	t.Parallel()

	c := mustLoad(t, "PORT=", "PG_USE_SSL=", "PG_SSL_REJECT_UNAUTHORIZED=", "FILE_BUFFER_DIR=",
		"LOG_LEVEL=", "QUEEN_SHUTDOWN_TIMEOUT=", "JWT_ALGORITHM=")
	require.Equal(t, 6632, c.Port)
	require.True(t, c.PGSSLRejectUnauthorized)
	require.Equal(t, "/var/lib/queen/buffers", c.FileBufferDir)
	require.Equal(t, "info", c.LogLevel)
	require.Equal(t, "HS256", c.JWTAlgorithm)
	require.Equal(t, SourceDefault, c.Source("PORT"))
}

func TestLoadEmptyIsAValueWhereDocumented(t *testing.T) {
	t.Parallel()

	t.Run("PasswordEmptyMeansNone", func(t *testing.T) {
		t.Parallel()
		c := mustLoad(t, "PG_PASSWORD=")
		require.Empty(t, c.PGPassword)
		require.Equal(t, SourceEnv, c.Source("PG_PASSWORD"))
	})
	t.Run("SkipPathsEmptyMeansNone", func(t *testing.T) {
		t.Parallel()
		require.Empty(t, mustLoad(t, "JWT_SKIP_PATHS=").JWTSkipPaths)
	})
	t.Run("WebappRootEmptyTurnsDashboardOff", func(t *testing.T) {
		t.Parallel()
		c := mustLoad(t, "WEBAPP_ROOT=")
		require.False(t, c.DashboardEnabled)
		require.Empty(t, c.WebappRoot)
	})
	t.Run("WebappRootDirectory", func(t *testing.T) {
		t.Parallel()
		c := mustLoad(t, "WEBAPP_ROOT=/srv/dash")
		require.True(t, c.DashboardEnabled)
		require.Equal(t, "/srv/dash", c.WebappRoot)
	})
}

func TestLoadEnums(t *testing.T) {
	t.Parallel()

	c := mustLoad(t, "LOG_LEVEL=DEBUG", "QUEEN_LOG_FORMAT=Text", "JWT_ALGORITHM=eddsa",
		"DEFAULT_SUBSCRIPTION_MODE=new-only")
	require.Equal(t, "debug", c.LogLevel)
	require.Equal(t, "text", c.LogFormat)
	require.Equal(t, "EdDSA", c.JWTAlgorithm)
	require.Equal(t, "new", c.DefaultSubscriptionMode)
	require.Equal(t, "all", mustLoad(t, "DEFAULT_SUBSCRIPTION_MODE=all").DefaultSubscriptionMode)

	for _, raw := range []string{"new", "new-only", "new_only", "newonly", "NewOnly"} {
		require.Equal(t, "new", mustLoad(t, "DEFAULT_SUBSCRIPTION_MODE="+raw).DefaultSubscriptionMode, raw)
	}
	require.Empty(t, mustLoad(t).DefaultSubscriptionMode, "queen's default stays all (empty)")

	msg := loadErr(t, "LOG_LEVEL=verbose", "JWT_ALGORITHM=PS256", "DEFAULT_SUBSCRIPTION_MODE=latest")
	require.Contains(t, msg, `config: LOG_LEVEL="verbose": must be one of trace, debug, info, warn, error`)
	require.Contains(t, msg, `config: JWT_ALGORITHM="PS256": must be one of HS256, HS384, HS512, RS256, RS384, RS512, ES256, EdDSA, auto`)
	require.Contains(t, msg, `config: DEFAULT_SUBSCRIPTION_MODE="latest": must be one of all, new, new-only, new_only, newonly`)
}

func TestLoadLists(t *testing.T) {
	t.Parallel()

	c := mustLoad(t, "CORS_ALLOWED_ORIGINS=https://a.example, http://localhost:5173 ,,",
		"JWT_SKIP_PATHS= /health , /public/ ")
	require.Equal(t, []string{"https://a.example", "http://localhost:5173"}, c.CORSAllowedOrigins)
	require.Equal(t, []string{"/health", "/public/"}, c.JWTSkipPaths)
	require.Equal(t, []string{"*"}, mustLoad(t, "CORS_ALLOWED_ORIGINS=*").CORSAllowedOrigins)

	msg := loadErr(t, "CORS_ALLOWED_ORIGINS=https://ok.example,ftp://files.example")
	require.Contains(t, msg, `"ftp://files.example" is not an origin`)
	require.Contains(t, loadErr(t, "CORS_ALLOWED_ORIGINS=https://a.example/app"), "is not an origin")
	// A browser's Origin never ends in "/", "?" or "#": such an entry would allow nothing.
	require.Contains(t, loadErr(t, "CORS_ALLOWED_ORIGINS=https://a.example/"), "is not an origin")
	require.Contains(t, loadErr(t, "CORS_ALLOWED_ORIGINS=https://a.example?"), "is not an origin")
}

func TestLoadPprofAddr(t *testing.T) {
	t.Parallel()

	require.Empty(t, mustLoad(t).PprofAddr, "off by default")
	require.Empty(t, mustLoad(t, "QUEEN_PPROF_ADDR=").PprofAddr, "empty means unset")
	for _, tc := range []struct{ name, raw string }{
		{"Loopback", "127.0.0.1:6060"},
		{"Localhost", "localhost:6060"},
		{"IPv6Loopback", "[::1]:6060"},
		{"EveryInterface", ":6060"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := mustLoad(t, "QUEEN_PPROF_ADDR="+tc.raw)
			require.Equal(t, tc.raw, c.PprofAddr)
			require.Equal(t, SourceEnv, c.Source("QUEEN_PPROF_ADDR"))
		})
	}
	for _, tc := range []struct{ name, raw, want string }{
		{"NoPort", "127.0.0.1", `config: QUEEN_PPROF_ADDR="127.0.0.1": not a host:port address`},
		{"PortOnly", "6060", `config: QUEEN_PPROF_ADDR="6060": not a host:port address`},
		{"URL", "http://127.0.0.1:6060", `config: QUEEN_PPROF_ADDR="http://127.0.0.1:6060": not a host:port address`},
		{"NamedPort", "127.0.0.1:http", `config: QUEEN_PPROF_ADDR="127.0.0.1:http": port "http": not an integer`},
		{"PortZero", "127.0.0.1:0", `config: QUEEN_PPROF_ADDR="127.0.0.1:0": port "0": must be between 1 and 65535`},
		{"PortTooHigh", "127.0.0.1:70000", `port "70000": must be between 1 and 65535`},
		{"UnbracketedIPv6", "::1:6060", `config: QUEEN_PPROF_ADDR="::1:6060": not a host:port address`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Contains(t, loadErr(t, "QUEEN_PPROF_ADDR="+tc.raw), tc.want)
		})
	}
}

func TestLoadEncryptionKey(t *testing.T) {
	t.Parallel()

	key := strings.Repeat("0123456789abcdef", 4)
	c := mustLoad(t, "QUEEN_ENCRYPTION_KEY="+key)
	require.Len(t, c.EncryptionKey, 32)
	require.Equal(t, byte(0x01), c.EncryptionKey[0])

	for _, tc := range []struct{ name, raw, want string }{
		{"TooShort", key[:63], "must be exactly 64 hex characters (32 bytes), got 63 characters"},
		{"NotHex", "zz" + key[2:], "not hexadecimal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			msg := loadErr(t, "QUEEN_ENCRYPTION_KEY="+tc.raw)
			require.Contains(t, msg, "config: QUEEN_ENCRYPTION_KEY=<redacted>: "+tc.want)
			require.NotContains(t, msg, tc.raw[2:])
		})
	}
}

func TestLoadJWTKeys(t *testing.T) {
	t.Parallel()

	const pemKey = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n"
	c := mustLoad(t, "JWT_PUBLIC_KEY="+strings.ReplaceAll(pemKey, "\n", `\n`))
	require.Equal(t, pemKey, c.JWTPublicKey)
	require.Contains(t, loadErr(t, "JWT_PUBLIC_KEY=not a key"), "config: JWT_PUBLIC_KEY=\"not a key\": not a PEM block")
	require.Contains(t, loadErr(t, "JWT_JWKS_URL=idp.example/jwks"), "not an http or https URL")

	// A private key after the public one (a bundle file) is refused, and neither the
	// refusal nor anything printed quotes it: the configuration is logged at boot.
	const keyBody = "MC4CAQAwBQYDK2VwBCIEIJ3JyAsMmVEc0hCVP4TBSEXZ6bGUZtVOmlvm7ZTIa8Kq"
	bundle := pemKey + "-----BEGIN PRIVATE KEY-----\n" + keyBody + "\n-----END PRIVATE KEY-----\n"
	msg := loadErr(t, "JWT_PUBLIC_KEY="+strings.ReplaceAll(bundle, "\n", `\n`))
	require.Contains(t, msg, "config: JWT_PUBLIC_KEY=<redacted>: holds a private key")
	require.NotContains(t, msg, keyBody)

	// The query of an endpoint URL prints without its values (an API key).
	c = mustLoad(t, "JWT_JWKS_URL=https://user:pw@idp.example/jwks.json?api_key=s3cr3t")
	require.NotContains(t, c.String(), "s3cr3t")
	require.NotContains(t, c.String(), ":pw@")
	require.Contains(t, c.String(), "api_key=xxxxx")
}

func TestLoadFirstOccurrenceWins(t *testing.T) {
	t.Parallel()

	c := mustLoad(t, "PORT=7000", "PORT=8000", "NOEQUALS", "=odd")
	require.Equal(t, 7000, c.Port)
}

func TestLoadCredentials(t *testing.T) {
	t.Parallel()

	type testBundle struct{ dir string }
	setup := func(t *testing.T, files map[string]string) *testBundle {
		t.Helper()
		dir := t.TempDir()
		for name, content := range files {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
		}
		return &testBundle{dir: dir}
	}

	t.Run("CredentialWinsOverEnv", func(t *testing.T) {
		t.Parallel()
		b := setup(t, map[string]string{"PG_PASSWORD": "from cred\n", "JWT_SECRET": "jwt\r\n"})
		c := mustLoad(t, "CREDENTIALS_DIRECTORY="+b.dir, "PG_PASSWORD=from-env", "JWT_ENABLED=true")
		require.Equal(t, "from cred", c.PGPassword)
		require.Equal(t, SourceCredential, c.Source("PG_PASSWORD"))
		require.Equal(t, "jwt", c.JWTSecret)
		require.Equal(t, SourceCredential, c.Source("JWT_SECRET"))
		require.Equal(t, []string{
			"PG_PASSWORD is set both in the environment and as a credential; the credential wins",
		}, c.Warnings())
	})
	t.Run("OnlySecretsComeFromCredentials", func(t *testing.T) {
		t.Parallel()
		b := setup(t, map[string]string{"PG_USER": "intruder"})
		c := mustLoad(t, "CREDENTIALS_DIRECTORY="+b.dir)
		require.Equal(t, "postgres", c.PGUser)
		require.Equal(t, SourceDefault, c.Source("PG_USER"))
	})
	t.Run("MissingFileFallsBackToEnv", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		c := mustLoad(t, "CREDENTIALS_DIRECTORY="+b.dir, "PG_PASSWORD=from-env")
		require.Equal(t, "from-env", c.PGPassword)
		require.Equal(t, SourceEnv, c.Source("PG_PASSWORD"))
	})
	t.Run("InvalidCredentialIsRedacted", func(t *testing.T) {
		t.Parallel()
		b := setup(t, map[string]string{"QUEEN_ENCRYPTION_KEY": "short-secret\n"})
		msg := loadErr(t, "CREDENTIALS_DIRECTORY="+b.dir)
		require.Contains(t, msg, "config: QUEEN_ENCRYPTION_KEY=<redacted>: must be exactly 64 hex")
		require.NotContains(t, msg, "short-secret")
	})
	t.Run("UnreadableCredentialIsAnError", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		require.NoError(t, os.Mkdir(filepath.Join(b.dir, "JWT_SECRET"), 0o700))
		require.Contains(t, loadErr(t, "CREDENTIALS_DIRECTORY="+b.dir), "config: JWT_SECRET=<redacted>: read credential")
	})
	t.Run("PublicKeyFromCredential", func(t *testing.T) {
		t.Parallel()
		pemText := "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n"
		b := setup(t, map[string]string{"JWT_PUBLIC_KEY": pemText})
		c := mustLoad(t, "CREDENTIALS_DIRECTORY="+b.dir)
		require.Equal(t, strings.TrimSuffix(pemText, "\n"), c.JWTPublicKey)
		require.Equal(t, SourceCredential, c.Source("JWT_PUBLIC_KEY"))
	})
	t.Run("UnusedSecretCredentialWarns", func(t *testing.T) {
		t.Parallel()
		b := setup(t, map[string]string{"QUEEN_SYNC_SECRET": "abc"})
		c := mustLoad(t, "CREDENTIALS_DIRECTORY="+b.dir)
		require.Len(t, c.Warnings(), 1)
		require.Contains(t, c.Warnings()[0], "credential QUEEN_SYNC_SECRET is accepted but unused")
	})
}

func TestLoadReportsEveryProblem(t *testing.T) {
	t.Parallel()

	_, err := Load([]string{
		"PG_USE_SSL=ture", "DB_POOL_SIZE=abc", "PORT=0", "QUEEN_MAX_BODY_BYTE=1",
		"DEFAULT_TIMEOUT=600000",
	})
	require.ErrorIs(t, err, ErrInvalid)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 4, err.Error())
	for _, name := range []string{"PG_USE_SSL", "DB_POOL_SIZE", "PORT", "DEFAULT_TIMEOUT"} {
		require.Contains(t, err.Error(), "config: "+name)
	}
	require.NotContains(t, err.Error(), "QUEEN_MAX_BODY_BYTE", "an unknown variable is reported, not fatal")

	// Problems come in table (document) order; errors.As finds the first.
	var cfgErr *Error
	require.ErrorAs(t, err, &cfgErr)
	require.Equal(t, "PORT", cfgErr.Name)
	require.Equal(t, "0", cfgErr.Value)
}

func TestLoadSkipsCombinationsOfUnparsableValues(t *testing.T) {
	t.Parallel()

	// The max interval fails to parse; comparing the initial interval with the max's
	// default would be a second, misleading error.
	_, err := Load([]string{"POP_WAIT_MAX_INTERVAL_MS=abc", "POP_WAIT_INITIAL_INTERVAL_MS=2000"})
	require.ErrorIs(t, err, ErrInvalid)
	require.Equal(t, `config: POP_WAIT_MAX_INTERVAL_MS="abc": not an integer`, err.Error())
}

func TestErrorIsMatchable(t *testing.T) {
	t.Parallel()

	err := error(&Error{Name: "PORT", Value: "x", Reason: "not an integer"})
	require.ErrorIs(t, err, ErrInvalid)
	require.False(t, errors.Is(errors.New("other"), ErrInvalid))
	require.Equal(t, `config: PORT="x": not an integer`, err.Error())
}

// quote is strconv.Quote, spelled out to keep the expected messages readable.
func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

func TestLoadGOGC(t *testing.T) {
	t.Parallel()
	require.Equal(t, 200, mustLoad(t).GCPercent, "queen's default")
	require.Equal(t, 150, mustLoad(t, "GOGC=150").GCPercent)
	require.Equal(t, -1, mustLoad(t, "GOGC=off").GCPercent)
	for _, raw := range []string{"0", "-5", "abc", "OFF", "100%"} {
		_, err := Load([]string{"GOGC=" + raw})
		require.ErrorContains(t, err, `GOGC="`+raw+`"`, raw)
	}
}

func TestLoadGOMEMLIMIT(t *testing.T) {
	t.Parallel()
	require.Equal(t, int64(24<<20), mustLoad(t).MemoryLimit, "queen's default")
	for raw, want := range map[string]int64{
		"off": math.MaxInt64, "1MiB": 1 << 20, "64MiB": 64 << 20, "2GiB": 2 << 30, "1TiB": 1 << 40,
		"4096KiB": 4 << 20, "3000000": 3000000, "3000000B": 3000000,
	} {
		require.Equal(t, want, mustLoad(t, "GOMEMLIMIT="+raw).MemoryLimit, raw)
	}
	for raw, reason := range map[string]string{
		"64": "must be at least 1MiB", "1023KiB": "must be at least 1MiB", "0": "must be at least 1MiB",
		"64MB": "not a byte count", "64 MiB": "not a byte count", "-1MiB": "not a byte count",
		"MiB": "not a byte count", "OFF": "not a byte count", "1.5GiB": "not a byte count",
		"9999999TiB": "byte count out of range", "99999999999999999999": "byte count out of range",
	} {
		_, err := Load([]string{"GOMEMLIMIT=" + raw})
		require.ErrorContains(t, err, `GOMEMLIMIT="`+raw+`": `+reason, raw)
	}
}

// The limit prints in the largest unit that divides it, so -print-config and the docs
// show what the runtime was given.
func TestGOMEMLIMITPrintsBack(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"off": "off", "24MiB": "24MiB", "25165824": "24MiB", "1048577": "1048577B", "2048MiB": "2GiB", "3000KiB": "3000KiB",
	} {
		c := mustLoad(t, "GOMEMLIMIT="+raw)
		require.Equal(t, want, memLimitValue{&c.MemoryLimit}.Get(), raw)
	}
}

// TestTenancyHeader1xBoolean: QUEEN_TENANCY_HEADER takes the Queen 1.x boolean (true:
// tenancy on with X-Queen-Tenant, false: off) in its strict spellings, and anything
// else as a header name, as before.
func TestTenancyHeader1xBoolean(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"true", "TRUE", "1", "yes", "On"} {
		c := mustLoad(t, "QUEEN_TENANCY_HEADER="+raw)
		require.Equal(t, "X-Queen-Tenant", c.TenancyHeader, raw)
		require.Contains(t, strings.Join(c.Warnings(), "\n"), "QUEEN_TENANCY_HEADER="+raw+" is read as the Queen 1.x boolean", raw)
	}
	for _, raw := range []string{"false", "0", "no", "OFF"} {
		require.Empty(t, mustLoad(t, "QUEEN_TENANCY_HEADER="+raw).TenancyHeader, raw)
	}
	for _, name := range []string{"X-Tenant", "truely", "Tenant-1", "y"} {
		require.Equal(t, name, mustLoad(t, "QUEEN_TENANCY_HEADER="+name).TenancyHeader, name)
	}
	require.Contains(t, loadErr(t, "QUEEN_TENANCY_HEADER=tru e"), "a header name has only letters")
}

// TestSubscriptionModeWarningFor1xEnvironments: an environment with a Queen 1.x-only
// variable and no DEFAULT_SUBSCRIPTION_MODE is told that queen's default differs;
// setting the variable, or a 0.15-style environment, is silent.
func TestSubscriptionModeWarningFor1xEnvironments(t *testing.T) {
	t.Parallel()
	const w = "DEFAULT_SUBSCRIPTION_MODE is unset in what looks like a Queen 1.x environment"
	for _, env := range [][]string{{"PG_DATABASE=q"}, {"JWT_ROLE_WRITE_ONLY=w"}, {"QUEEN_TENANCY_HEADER=off"}} {
		require.Contains(t, strings.Join(mustLoad(t, env...).Warnings(), "\n"), w, env)
		require.NotContains(t, strings.Join(mustLoad(t, append(env, "DEFAULT_SUBSCRIPTION_MODE=new")...).Warnings(), "\n"), w, env)
	}
	require.NotContains(t, strings.Join(mustLoad(t, "PG_DB=q", "QUEEN_TENANCY_HEADER=X-Tenant").Warnings(), "\n"), w)
}
