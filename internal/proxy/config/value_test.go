package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The proxy reads its values with the broker's parser but keeps its own wording, which
// quotes the value: these are the messages queen-proxy has always printed.
func TestSettingErrorsKeepTheProxyWording(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, raw, want string }{
		{"QUEEN_PROXY_LOGIN", "maybe", `"maybe" is not a boolean (use true/false, 1/0, yes/no or on/off)`},
		{"PORT", "66x", `"66x" is not an integer`},
		{"PORT", "99999999999999999999", `"99999999999999999999" is not an integer`},
		{"PORT", "70000", "70000 is outside 0..65535"},
		{"PG_PORT", "0", "0 is outside 1..65535"},
		{"DB_POOL_SIZE", "1", "1 is outside 2..1000"},
		{"DB_STATEMENT_TIMEOUT", "0", "0 is outside 1..3600000"},
		{"DB_STATEMENT_TIMEOUT", "1s", `"1s" is not an integer`},
		{"QUEEN_PROXY_MAX_BODY_BYTES", "10", "10 is outside 1024..1073741824"},
		{"QUEEN_PROXY_AUTH_CACHE_TTL", "5", `"5" is not a duration (e.g. 500ms, 2s, 1m)`},
		{"QUEEN_PROXY_BROKER_JWT_TTL", "2h", "2h0m0s is outside 1m0s..1h0m0s"},
	} {
		s := settingNamed(t, tc.name)
		require.EqualError(t, s.apply(&Config{}, tc.raw), tc.want, tc.name)
	}
}

func TestSettingValuesParse(t *testing.T) {
	t.Parallel()
	c := &Config{}
	for name, raw := range map[string]string{
		"PORT": "6640", "QUEEN_PROXY_LOGIN": "off", "DB_STATEMENT_TIMEOUT": "1500",
		"QUEEN_PROXY_BROKER_JWT_TTL": "10m", "QUEEN_PROXY_CORS_ALLOWED_ORIGINS": " https://a.example, ,https://b.example",
	} {
		require.NoError(t, settingNamed(t, name).apply(c, raw), name)
	}
	require.Equal(t, 6640, c.Port)
	require.False(t, c.Login)
	require.Equal(t, "1.5s", c.DBStatementTimeout.String())
	require.Equal(t, "10m0s", c.BrokerJWTTTL.String())
	require.Equal(t, []string{"https://a.example", "https://b.example"}, c.CORSAllowedOrigins)
}

func settingNamed(t *testing.T, name string) setting {
	t.Helper()
	for _, s := range settings {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("no setting %s", name)
	return setting{}
}
