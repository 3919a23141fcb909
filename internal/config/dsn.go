package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/envvalue"
)

// pgTLSMaterial is the PEM that PG_SSL_ROOT_CERT, PG_SSL_CERT and PG_SSL_KEY hold,
// read (from the value or its file) and checked by Load.
type pgTLSMaterial struct {
	rootCert, cert, key []byte
}

// PGConnString returns a libpq keyword/value connection string for PostgreSQL, as pgx
// parses it: host and port (PG_HOST and PG_PORT, each one value or a comma-separated
// list: pgx tries the hosts in turn), dbname, user, password (each quoted when
// needed), sslmode (PGSSLMode), target_session_attrs (PG_TARGET_SESSION_ATTRS: pgx
// keeps a connection only to a server that passes it, on every new connection),
// connect_timeout in whole seconds rounded up and at least 1, and
// application_name=queen.
//
// The trust anchors and the client certificate (PG_SSL_ROOT_CERT, PG_SSL_CERT,
// PG_SSL_KEY) are not in it: they may be PEM text, and pgx reads sslrootcert, sslcert
// and sslkey as file paths. Give PGRootCAs and PGClientCert to the pool instead
// (store.Options); without them sslmode=verify-full trusts the system's CAs.
//
// It deliberately leaves out libpq's keepalives, keepalives_idle, keepalives_interval,
// keepalives_count and tcp_user_timeout: pgx does not know them and would send them to
// the server as run-time parameters, which PostgreSQL rejects at connect time
// ("unrecognized configuration parameter"). Apply DBKeepalivesIdle,
// DBKeepalivesInterval, DBKeepalivesCount and DBTCPUserTimeout on the pool's dialer
// instead (net.Dialer.KeepAliveConfig and the TCP_USER_TIMEOUT socket option).
// The password is in clear text: never log the result.
func (c *Config) PGConnString() string {
	connectTimeout := int64(c.ConnectTimeout() / time.Second)
	pairs := [][2]string{
		{"host", c.PGHost},
		{"port", c.PGPort},
		{"dbname", c.PGDB},
		{"user", c.PGUser},
		{"password", c.PGPassword},
		{"sslmode", c.PGSSLMode()},
		{"target_session_attrs", c.PGTargetSessionAttrs},
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

// PGSSLMode is the libpq sslmode the settings ask for: disable without PG_USE_SSL;
// with it, verify-full (the server's certificate must chain to a trusted CA and name
// the host connected to), or require (encrypted, the server not verified) when
// PG_SSL_REJECT_UNAUTHORIZED=false. Over a Unix socket pgx, like libpq, uses no TLS.
func (c *Config) PGSSLMode() string {
	return envvalue.PGSSLMode(c.PGUseSSL, c.PGSSLRejectUnauthorized)
}

// PGHosts returns the hosts of PG_HOST, in the order they are tried.
func (c *Config) PGHosts() []string {
	return strings.Split(c.PGHost, ",")
}

// PGServers describes where PostgreSQL is, for logs and status lines, without
// credentials: "db1 port 5432", "db1, db2 port 5432" when one port serves every host,
// "db1 port 5432, db2 port 5433" with one port per host.
func (c *Config) PGServers() string {
	hosts, ports := c.PGHosts(), strings.Split(c.PGPort, ",")
	if len(ports) != len(hosts) || len(hosts) == 1 {
		return strings.Join(hosts, ", ") + " port " + ports[0]
	}
	parts := make([]string, len(hosts))
	for i, h := range hosts {
		parts[i] = h + " port " + ports[i]
	}
	return strings.Join(parts, ", ")
}

// PGRootCAs returns the certificates of PG_SSL_ROOT_CERT as a pool, the trust anchors
// for the server's certificate; nil when it is unset, meaning the system's CAs.
func (c *Config) PGRootCAs() *x509.CertPool {
	if len(c.pgTLS.rootCert) == 0 {
		return nil
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.pgTLS.rootCert)
	return pool
}

// PGClientCert returns the client certificate of PG_SSL_CERT and PG_SSL_KEY, presented
// to a server that asks for one; nil when they are unset. Load has checked that they
// make a key pair; on a Config changed by hand into one that does not, it is nil too.
func (c *Config) PGClientCert() *tls.Certificate {
	if len(c.pgTLS.cert) == 0 || len(c.pgTLS.key) == 0 {
		return nil
	}
	cert, err := tls.X509KeyPair(c.pgTLS.cert, c.pgTLS.key)
	if err != nil {
		return nil
	}
	return &cert
}

// pgTLSWarnings lists the TLS settings that are set but change nothing: certificates
// and PG_SSL_REJECT_UNAUTHORIZED without PG_USE_SSL, and a CA under
// PG_SSL_REJECT_UNAUTHORIZED=false, which accepts any server certificate.
func (c *Config) pgTLSWarnings() []string {
	var ws []string
	if !c.PGUseSSL {
		for _, name := range []string{"PG_SSL_REJECT_UNAUTHORIZED", "PG_SSL_ROOT_CERT", "PG_SSL_CERT", "PG_SSL_KEY"} {
			if c.Source(name) != SourceDefault {
				ws = append(ws, name+" is set but unused: PG_USE_SSL=false connects without TLS")
			}
		}
		return ws
	}
	if !c.PGSSLRejectUnauthorized && c.PGSSLRootCert != "" {
		ws = append(ws, "PG_SSL_ROOT_CERT is set but unused: PG_SSL_REJECT_UNAUTHORIZED=false "+
			"accepts any server certificate without verifying it")
	}
	return ws
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

// InflightDeadline is how long a statement may go unanswered before its connection is
// closed (LIBQUEEN_INFLIGHT_DEADLINE_MS, at least 2 s; by default DB_STATEMENT_TIMEOUT
// + 5 s); 0 means no limit (DB_STATEMENT_TIMEOUT 0 and the deadline unset).
func (c *Config) InflightDeadline() time.Duration {
	switch {
	case c.DBInflightDeadline > 0:
		return max(c.DBInflightDeadline, minInflightDeadline)
	case c.DBStatementTimeout > 0:
		return c.DBStatementTimeout + 5*time.Second
	}
	return 0
}

// inflightWarnings says when LIBQUEEN_INFLIGHT_DEADLINE_MS was raised to its floor,
// and when it ends statements a running server would still be working on: at or
// below DB_STATEMENT_TIMEOUT, or with no statement timeout at all. Such a statement
// is then answered as on a lost connection (503, a push spooled) rather than by the
// server's own timeout (504, nothing stored).
func (c *Config) inflightWarnings() []string {
	if c.DBInflightDeadline <= 0 {
		return nil
	}
	var out []string
	if c.DBInflightDeadline < minInflightDeadline {
		out = append(out, fmt.Sprintf("LIBQUEEN_INFLIGHT_DEADLINE_MS=%d is raised to %d, its minimum",
			c.DBInflightDeadline.Milliseconds(), minInflightDeadline.Milliseconds()))
	}
	deadline := c.InflightDeadline()
	switch {
	case c.DBStatementTimeout <= 0:
		out = append(out, fmt.Sprintf("LIBQUEEN_INFLIGHT_DEADLINE_MS=%d with DB_STATEMENT_TIMEOUT=0: a statement still "+
			"running after %s is taken for one PostgreSQL left unanswered, its connection closed and its request "+
			"answered 503 (a push spooled)", deadline.Milliseconds(), deadline))
	case deadline <= c.DBStatementTimeout:
		out = append(out, fmt.Sprintf("LIBQUEEN_INFLIGHT_DEADLINE_MS=%d is not above DB_STATEMENT_TIMEOUT=%d: a statement "+
			"still running after %s is taken for one PostgreSQL left unanswered, its connection closed and its request "+
			"answered 503 (a push spooled) instead of 504 by statement_timeout; leave it unset for DB_STATEMENT_TIMEOUT "+
			"+ 5000", deadline.Milliseconds(), c.DBStatementTimeout.Milliseconds(), deadline))
	}
	return out
}

// minInflightDeadline is the floor of LIBQUEEN_INFLIGHT_DEADLINE_MS, as in the Queen
// 1.x brokers.
const minInflightDeadline = 2 * time.Second

// ConnectTimeout bounds each connection attempt: DB_CONNECTION_TIMEOUT rounded up to
// whole seconds, at least one, as libpq's connect_timeout takes it (upstream values
// under 1000 ms meant "wait forever"; they wait a second here).
func (c *Config) ConnectTimeout() time.Duration {
	return max(time.Second, (c.DBConnectionTimeout + time.Second - 1).Truncate(time.Second))
}
