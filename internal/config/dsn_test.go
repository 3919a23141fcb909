package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPGConnString(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name    string
		environ []string
		want    string
	}{
		{"Defaults", nil,
			"host=localhost port=5432 dbname=postgres user=postgres password=postgres sslmode=disable " +
				"connect_timeout=2 application_name=queen"},
		{"PasswordWithSpacesAndQuotes", []string{`PG_PASSWORD=it's a "pass\word"`},
			`password='it\'s a "pass\\word"'`},
		{"EmptyPasswordIsQuoted", []string{"PG_PASSWORD="}, "password='' "},
		{"SocketDirectoryWithSpace", []string{"PG_HOST=/run/my pg", "PG_DB=queen db"},
			"host='/run/my pg' port=5432 dbname='queen db' "},
		{"SSLRequire", []string{"PG_USE_SSL=true"}, "sslmode=require"},
		{"SSLPrefer", []string{"PG_USE_SSL=true", "PG_SSL_REJECT_UNAUTHORIZED=false"}, "sslmode=prefer"},
		{"RejectUnauthorizedAloneKeepsSSLOff", []string{"PG_SSL_REJECT_UNAUTHORIZED=false"}, "sslmode=disable"},
		{"ConnectTimeoutRoundsUp", []string{"DB_CONNECTION_TIMEOUT=2001"}, "connect_timeout=3 "},
		{"ConnectTimeoutAtLeastOneSecond", []string{"DB_CONNECTION_TIMEOUT=1"}, "connect_timeout=1 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Contains(t, mustLoad(t, tc.environ...).PGConnString(), tc.want)
		})
	}
}

func TestPGConnStringLeavesOutWhatPgxWouldForwardToTheServer(t *testing.T) {
	t.Parallel()

	dsn := mustLoad(t).PGConnString()
	for _, key := range []string{"keepalives", "tcp_user_timeout"} {
		require.NotContains(t, dsn, key)
	}
}

func TestQuoteConnValue(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct{ name, in, want string }{
		{"Plain", "postgres", "postgres"},
		{"Empty", "", "''"},
		{"Space", "a b", "'a b'"},
		{"Quote", "a'b", `'a\'b'`},
		{"Backslash", `a\b`, `'a\\b'`},
		{"Tab", "a\tb", "'a\tb'"},
		{"EqualsNeedsNoQuotes", "a=b", "a=b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, quoteConnValue(tc.in))
		})
	}
}
