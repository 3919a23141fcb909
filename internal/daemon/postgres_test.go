package daemon_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/testlog"
)

// TestPostgresTLS runs whole daemons against a PostgreSQL server of the test's own
// with ssl=on and a certificate for localhost and 127.0.0.1 from a CA the test makes
// (also listening on 127.0.0.2, which the certificate does not name). A daemon that
// cannot verify the server waits for PostgreSQL, and each "waiting for PostgreSQL"
// line names the reason; one that can becomes ready.
func TestPostgresTLS(t *testing.T) {
	t.Parallel()

	srv, ca, admin := pgtest.StartTLSTestServer(t)
	for _, db := range []string{"verified", "unverified"} {
		_, err := admin.Exec(t.Context(), "CREATE DATABASE "+db)
		require.NoError(t, err)
	}
	env := func(vars ...string) []string {
		// Earlier entries win: vars override the base.
		return append(vars, "PG_HOST=localhost", "PG_PORT="+strconv.Itoa(srv.Port()), "PG_DB=postgres",
			"PG_USER=postgres", "PG_PASSWORD=", "PG_USE_SSL=true", "LOG_LEVEL=info")
	}
	caPEM := string(ca.CertPEM)

	t.Run("ConnectsWithTheRightCA", func(t *testing.T) {
		t.Parallel()
		var logs testlog.Buffer
		d := daemontest.Start(t, daemontest.Options{NoDatabase: true, Logs: &logs,
			Env: env("PG_DB=verified", "PG_SSL_ROOT_CERT="+caPEM)})
		boot := logLine(t, &logs, "PostgreSQL connection")
		require.Equal(t, "verify-full", boot["sslmode"])
		require.Equal(t, "PG_SSL_ROOT_CERT", boot["trusted_cas"])
		require.Equal(t, "localhost port "+strconv.Itoa(srv.Port()), boot["servers"])
		require.NoError(t, d.Stop())
	})

	t.Run("UnverifiedIsALoudWarning", func(t *testing.T) {
		t.Parallel()
		var logs testlog.Buffer
		d := daemontest.Start(t, daemontest.Options{NoDatabase: true, Logs: &logs,
			Env: env("PG_DB=unverified", "PG_SSL_REJECT_UNAUTHORIZED=false")})
		warn := logLine(t, &logs, "PostgreSQL TLS does not verify the server: its identity is not verified "+
			"(PG_SSL_REJECT_UNAUTHORIZED=false), so anyone on the network path to it can pose as the "+
			"database and read or change what the broker stores")
		require.Equal(t, "WARN", warn["level"])
		require.Equal(t, "require", warn["sslmode"])
		require.NoError(t, d.Stop())
	})

	plain := plainTextEnv(t)
	for _, tc := range []struct {
		name       string
		environ    []string
		err, hint  string // what the "waiting for PostgreSQL" line's err and hint contain
		noHintWant bool
	}{
		{name: "RefusesAnotherCA", environ: env("PG_SSL_ROOT_CERT=" + string(pgtest.NewCA(t).CertPEM)),
			err:  "x509: certificate signed by unknown authority",
			hint: "the server's certificate is not signed by a CA the broker trusts; set PG_SSL_ROOT_CERT"},
		{name: "RefusesWithoutCA", environ: env(),
			err:  "x509: certificate signed by unknown authority",
			hint: "(unset, only the system's CAs are trusted)"},
		{name: "RefusesAWrongHostName", environ: env("PG_HOST=127.0.0.2", "PG_SSL_ROOT_CERT="+caPEM),
			err:  "not 127.0.0.2",
			hint: "the server's certificate does not name the host connected to"},
		{name: "RefusesTheCertRoleWithoutClientCertificate",
			environ: env("PG_USER=queen_cert", "PG_SSL_ROOT_CERT="+caPEM),
			err:     "connection requires a valid client certificate (SQLSTATE 28000)", noHintWant: true},
		{name: "RefusesAServerWithoutTLS", environ: append(plain, "PG_USE_SSL=true", "PG_SSL_ROOT_CERT="+caPEM),
			err: "server refused TLS connection", noHintWant: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs testlog.Buffer
			d := daemontest.Start(t, daemontest.Options{NoDatabase: true, NoWait: true, Logs: &logs, Env: tc.environ})
			line := logLine(t, &logs, "waiting for PostgreSQL")
			require.Equal(t, "WARN", line["level"])
			require.Contains(t, line["err"], tc.err)
			if tc.noHintWant {
				require.NotContains(t, line, "hint")
			} else {
				require.Contains(t, line["hint"], tc.hint)
			}
			require.NoError(t, d.Stop())
		})
	}
}

// plainTextEnv returns the PG_* variables of a fresh database of the shared test
// server, which has no TLS.
func plainTextEnv(t *testing.T) []string {
	t.Helper()
	return append(daemontest.PGEnv(t, pgtest.NewDBURL(t)), "LOG_LEVEL=info")
}

// logLine waits up to 15 s for a JSON log line whose msg is msg, and returns it.
func logLine(t *testing.T, logs *testlog.Buffer, msg string) map[string]any {
	t.Helper()
	var found map[string]any
	require.Eventually(t, func() bool {
		sc := bufio.NewScanner(bytes.NewReader(logs.Bytes()))
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == msg {
				found = line
				return true
			}
		}
		return false
	}, 15*time.Second, 20*time.Millisecond, "no log line %q in:\n%s", msg, logs.Tail(4096))
	return found
}
