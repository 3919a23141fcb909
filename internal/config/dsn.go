package config

import (
	"strconv"
	"strings"
	"time"
)

// PGConnString returns a libpq keyword/value connection string for PostgreSQL, as pgx
// parses it: host, port, dbname, user, password (each quoted when needed), sslmode
// (PG_USE_SSL=false → disable; true → require, or prefer with
// PG_SSL_REJECT_UNAUTHORIZED=false), connect_timeout in whole seconds rounded up and at
// least 1, and application_name=queen.
//
// It deliberately leaves out libpq's keepalives, keepalives_idle, keepalives_interval,
// keepalives_count and tcp_user_timeout: pgx does not know them and would send them to
// the server as run-time parameters, which PostgreSQL rejects at connect time
// ("unrecognized configuration parameter"). Apply DBKeepalivesIdle,
// DBKeepalivesInterval, DBKeepalivesCount and DBTCPUserTimeout on the pool's dialer
// instead (net.Dialer.KeepAliveConfig and the TCP_USER_TIMEOUT socket option).
// The password is in clear text: never log the result.
func (c *Config) PGConnString() string {
	sslmode := "disable"
	if c.PGUseSSL {
		sslmode = "require"
		if !c.PGSSLRejectUnauthorized {
			sslmode = "prefer"
		}
	}
	connectTimeout := max(1, int64((c.DBConnectionTimeout+time.Second-1)/time.Second))
	pairs := [][2]string{
		{"host", c.PGHost},
		{"port", c.PGPort},
		{"dbname", c.PGDB},
		{"user", c.PGUser},
		{"password", c.PGPassword},
		{"sslmode", sslmode},
		{"connect_timeout", strconv.FormatInt(connectTimeout, 10)},
		{"application_name", "queen"},
	}
	var b strings.Builder
	for i, kv := range pairs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(kv[0])
		b.WriteByte('=')
		b.WriteString(quoteConnValue(kv[1]))
	}
	return b.String()
}

// quoteConnValue quotes a keyword/value connection-string value when libpq requires it
// (empty, or containing whitespace, a quote or a backslash): inside single quotes,
// backslash and single quote are escaped with a backslash.
func quoteConnValue(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\r\v\f'\\") {
		return v
	}
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(v) + "'"
}
