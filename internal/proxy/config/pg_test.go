package config_test

import (
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/config"
)

// TestPGSettingsAreTheBrokers: the proxy's database settings mean what the broker's
// do: PG_USE_SSL verifies the server (verify-full) unless PG_SSL_REJECT_UNAUTHORIZED
// is false, the PG_SSL_* files reach the driver, PG_TARGET_SESSION_ATTRS takes the
// broker's values, and PG_PASSWORD set but empty sends no password.
func TestPGSettingsAreTheBrokers(t *testing.T) {
	t.Parallel()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o600))
	conn := func(t *testing.T, env ...string) url.Values {
		t.Helper()
		cfg, err := config.Load(append([]string{"QUEEN_PROXY_LOGIN=false"}, env...))
		require.NoError(t, err)
		u, err := url.Parse(cfg.PGConnString())
		require.NoError(t, err)
		return u.Query()
	}

	q := conn(t)
	require.Equal(t, "disable", q.Get("sslmode"))
	require.Equal(t, "read-write", q.Get("target_session_attrs"))
	require.Equal(t, "verify-full", conn(t, "PG_USE_SSL=true").Get("sslmode"))
	require.Equal(t, "require", conn(t, "PG_USE_SSL=true", "PG_SSL_REJECT_UNAUTHORIZED=false").Get("sslmode"))
	require.Equal(t, ca, conn(t, "PG_USE_SSL=true", "PG_SSL_ROOT_CERT="+ca).Get("sslrootcert"))
	require.Equal(t, "primary", conn(t, "PG_TARGET_SESSION_ATTRS=Primary").Get("target_session_attrs"))
	require.Equal(t, "3", conn(t, "DB_CONNECTION_TIMEOUT=2500").Get("connect_timeout"), "rounded up, as the broker")
	require.Equal(t, "1", conn(t, "DB_CONNECTION_TIMEOUT=1").Get("connect_timeout"))

	cfg, err := config.Load([]string{"QUEEN_PROXY_LOGIN=false", "PG_PASSWORD="})
	require.NoError(t, err)
	u, err := url.Parse(cfg.PGConnString())
	require.NoError(t, err)
	_, hasPassword := u.User.Password()
	require.False(t, hasPassword, "an empty PG_PASSWORD sends none (.pgpass, peer, trust)")
	cfg, err = config.Load([]string{"QUEEN_PROXY_LOGIN=false"})
	require.NoError(t, err)
	u, err = url.Parse(cfg.PGConnString())
	require.NoError(t, err)
	pw, _ := u.User.Password()
	require.Equal(t, "postgres", pw, "an unset PG_PASSWORD is the default")

	for _, tc := range []struct{ name, env string }{
		{"PEMText", "PG_SSL_ROOT_CERT=-----BEGIN CERTIFICATE-----\\nMIIB"},
		{"MissingFile", "PG_SSL_CERT=" + filepath.Join(t.TempDir(), "none.pem")},
		{"Standby", "PG_TARGET_SESSION_ATTRS=standby"},
		{"RejectNotBoolean", "PG_SSL_REJECT_UNAUTHORIZED=maybe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Load([]string{"QUEEN_PROXY_LOGIN=false", tc.env})
			require.Error(t, err)
			require.True(t, config.IsConfigError(err))
		})
	}
}

// TestLogLevelIsTheBrokers: LOG_LEVEL takes the broker's words, trace as debug, and
// nothing else (slog's offsets such as info+2 included).
func TestLogLevelIsTheBrokers(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load([]string{"QUEEN_PROXY_LOGIN=false", "LOG_LEVEL=Trace"})
	require.NoError(t, err)
	require.Equal(t, slog.LevelDebug, cfg.LogLevel)
	cfg, err = config.Load([]string{"QUEEN_PROXY_LOGIN=false", "LOG_LEVEL=warn"})
	require.NoError(t, err)
	require.Equal(t, slog.LevelWarn, cfg.LogLevel)
	_, err = config.Load([]string{"QUEEN_PROXY_LOGIN=false", "LOG_LEVEL=info+2"})
	require.Error(t, err)
}
