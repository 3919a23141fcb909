package config

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
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
				"target_session_attrs=read-write connect_timeout=2 application_name=queen"},
		{"PasswordWithSpacesAndQuotes", []string{`PG_PASSWORD=it's a "pass\word"`},
			`password='it\'s a "pass\\word"'`},
		{"EmptyPasswordIsQuoted", []string{"PG_PASSWORD="}, "password='' "},
		{"SocketDirectoryWithSpace", []string{"PG_HOST=/run/my pg", "PG_DB=queen db"},
			"host='/run/my pg' port=5432 dbname='queen db' "},
		{"HostList", []string{"PG_HOST=127.0.0.2, 127.0.0.3"}, "host=127.0.0.2,127.0.0.3 port=5432 "},
		{"OnePortPerHost", []string{"PG_HOST=db1,db2", "PG_PORT=5432, 05433"}, "host=db1,db2 port=5432,5433 "},
		{"SocketAndTCPHosts", []string{"PG_HOST=/run/postgresql,db2"}, "host=/run/postgresql,db2 "},
		{"TargetPrimary", []string{"PG_TARGET_SESSION_ATTRS=primary"}, " target_session_attrs=primary "},
		{"TargetAnyInAnyCase", []string{"PG_TARGET_SESSION_ATTRS=ANY"}, " target_session_attrs=any "},
		{"SSLVerifiesFully", []string{"PG_USE_SSL=true"}, "sslmode=verify-full"},
		{"SSLUnverifiedWhenAskedExplicitly", []string{"PG_USE_SSL=true", "PG_SSL_REJECT_UNAUTHORIZED=false"},
			"sslmode=require"},
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

func TestPGConnStringLeavesTLSMaterialToThePool(t *testing.T) {
	t.Parallel()

	b := newTLSBundle(t)
	dsn := mustLoad(t, "PG_USE_SSL=true", "PG_SSL_ROOT_CERT="+b.caPath, "PG_SSL_CERT="+b.certPath,
		"PG_SSL_KEY="+b.keyPath).PGConnString()
	for _, key := range []string{"sslrootcert", "sslcert", "sslkey", b.dir} {
		require.NotContains(t, dsn, key, "pgx would read it as a file path; the store gets the parsed material")
	}
}

func TestPGSettingErrors(t *testing.T) {
	t.Parallel()

	b := newTLSBundle(t)
	_, otherKey := b.ca.Issue(t, "other")
	notPEM := filepath.Join(b.dir, "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("hello\n"), 0o600))
	for _, tc := range []struct {
		name    string
		environ []string
		want    string
	}{
		{"EmptyHostInList", []string{"PG_HOST=db1,,db2"}, `config: PG_HOST="db1,,db2": entry 2 of the list is empty`},
		{"PortNotNumeric", []string{"PG_PORT=postgres"}, `config: PG_PORT="postgres": not an integer`},
		{"PortOfListNotNumeric", []string{"PG_HOST=db1,db2", "PG_PORT=5432,x"},
			`config: PG_PORT="5432,x": port "x": not an integer`},
		{"PortOutOfRange", []string{"PG_HOST=db1,db2", "PG_PORT=5432,70000"}, `port "70000": must be between 1 and 65535`},
		{"PortCountMatchesNoHostCount", []string{"PG_HOST=db1,db2,db3", "PG_PORT=5432,5433"},
			`config: PG_PORT="5432,5433": has 2 ports for the 3 hosts of PG_HOST="db1,db2,db3": ` +
				"give one port for every host, or one per host"},
		{"TargetReadOnlyRefused", []string{"PG_TARGET_SESSION_ATTRS=read-only"},
			`config: PG_TARGET_SESSION_ATTRS="read-only": the broker writes on every push, pop and ack`},
		{"TargetStandbyRefused", []string{"PG_TARGET_SESSION_ATTRS=standby"}, "use read-write, primary or any"},
		{"TargetPreferStandbyRefused", []string{"PG_TARGET_SESSION_ATTRS=prefer-standby"}, "cannot work on a server"},
		{"TargetUnknown", []string{"PG_TARGET_SESSION_ATTRS=read_write"},
			`config: PG_TARGET_SESSION_ATTRS="read_write": must be one of read-write, primary, any`},
		{"RootCertFileMissing", []string{"PG_SSL_ROOT_CERT=" + filepath.Join(b.dir, "nope.pem")},
			`/nope.pem": cannot read the file: no such file or directory`},
		{"RootCertFileNotPEM", []string{"PG_SSL_ROOT_CERT=" + notPEM}, `not.pem": holds no PEM certificate`},
		{"RootCertTextHoldsAKey", []string{"PG_SSL_ROOT_CERT=" + string(otherKey)}, "holds no PEM certificate"},
		{"CertWithoutKey", []string{"PG_SSL_CERT=" + b.certPath}, "PG_SSL_CERT=\"" + b.certPath + "\": needs PG_SSL_KEY"},
		{"KeyWithoutCert", []string{"PG_SSL_KEY=" + b.keyPath}, "config: PG_SSL_KEY=<redacted>: needs PG_SSL_CERT"},
		{"KeyOfAnotherCertificate", []string{"PG_SSL_CERT=" + b.certPath, "PG_SSL_KEY=" + string(otherKey)},
			"config: PG_SSL_KEY=<redacted>: is not the private key of PG_SSL_CERT"},
		{"KeyThatIsACertificate", []string{"PG_SSL_CERT=" + b.certPath, "PG_SSL_KEY=" + b.certPath},
			"config: PG_SSL_KEY=<redacted>: holds no PEM private key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Contains(t, loadErr(t, tc.environ...), tc.want)
		})
	}
}

func TestPGSSLKeyNeverInAnError(t *testing.T) {
	t.Parallel()

	// A key pasted without its PEM armour is taken for a path; neither the failure to
	// read it nor a key that matches no certificate may print it.
	b := newTLSBundle(t)
	_, otherKey := b.ca.Issue(t, "other")
	bare := strings.Split(string(otherKey), "\n")[1] // base64 of the key, no armour
	for _, environ := range [][]string{
		{"PG_SSL_CERT=" + b.certPath, "PG_SSL_KEY=" + bare},
		{"PG_SSL_CERT=" + b.certPath, "PG_SSL_KEY=" + string(otherKey)},
	} {
		msg := loadErr(t, environ...)
		require.Contains(t, msg, "PG_SSL_KEY=<redacted>")
		require.NotContains(t, msg, bare)
	}
}

func TestPGTLSMaterial(t *testing.T) {
	t.Parallel()

	b := newTLSBundle(t)
	oneLine := func(pemText []byte) string { return strings.ReplaceAll(string(pemText), "\n", `\n`) }
	for _, tc := range []struct {
		name    string
		environ []string
	}{
		{"FilePaths", []string{"PG_SSL_ROOT_CERT=" + b.caPath, "PG_SSL_CERT=" + b.certPath, "PG_SSL_KEY=" + b.keyPath}},
		{"PEMText", []string{"PG_SSL_ROOT_CERT=" + string(b.ca.CertPEM), "PG_SSL_CERT=" + string(b.certPEM),
			"PG_SSL_KEY=" + string(b.keyPEM)}},
		{"PEMTextOnOneLine", []string{"PG_SSL_ROOT_CERT=" + oneLine(b.ca.CertPEM), "PG_SSL_CERT=" + oneLine(b.certPEM),
			"PG_SSL_KEY=" + oneLine(b.keyPEM)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := mustLoad(t, append([]string{"PG_USE_SSL=true"}, tc.environ...)...)
			// The pool holds the CA: a certificate it issued verifies against it.
			leaf, err := x509.ParseCertificate(mustDecode(t, b.certPEM))
			require.NoError(t, err)
			_, err = leaf.Verify(x509.VerifyOptions{Roots: c.PGRootCAs(), DNSName: "localhost",
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
			require.NoError(t, err)
			cert := c.PGClientCert()
			require.NotNil(t, cert)
			require.Equal(t, leaf.Raw, cert.Certificate[0])
			require.Empty(t, c.Warnings())
		})
	}

	t.Run("UnsetMeansSystemRootsAndNoClientCertificate", func(t *testing.T) {
		t.Parallel()
		c := mustLoad(t, "PG_USE_SSL=true")
		require.Nil(t, c.PGRootCAs())
		require.Nil(t, c.PGClientCert())
	})

	t.Run("KeyAsCredential", func(t *testing.T) {
		t.Parallel()
		creds := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(creds, "PG_SSL_KEY"), b.keyPEM, 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(creds, "PG_SSL_ROOT_CERT"), b.ca.CertPEM, 0o600))
		c := mustLoad(t, "CREDENTIALS_DIRECTORY="+creds, "PG_USE_SSL=true", "PG_SSL_CERT="+b.certPath)
		require.Equal(t, SourceCredential, c.Source("PG_SSL_KEY"))
		require.Equal(t, SourceCredential, c.Source("PG_SSL_ROOT_CERT"))
		require.NotNil(t, c.PGClientCert())
		require.NotNil(t, c.PGRootCAs())
	})

	t.Run("KeyIsRedactedInPrint", func(t *testing.T) {
		t.Parallel()
		c := mustLoad(t, "PG_USE_SSL=true", "PG_SSL_CERT="+string(b.certPEM), "PG_SSL_KEY="+string(b.keyPEM))
		printed := c.String()
		require.Contains(t, printed, "PG_SSL_KEY=<redacted>  # env")
		require.NotContains(t, printed, strings.Split(string(b.keyPEM), "\n")[1])
	})
}

func TestPGTLSWarnings(t *testing.T) {
	t.Parallel()

	b := newTLSBundle(t)
	for _, tc := range []struct {
		name    string
		environ []string
		want    []string
	}{
		{"VerifiedWithCA", []string{"PG_USE_SSL=true", "PG_SSL_ROOT_CERT=" + b.caPath}, nil},
		{"CAWithoutSSL", []string{"PG_SSL_ROOT_CERT=" + b.caPath},
			[]string{"PG_SSL_ROOT_CERT is set but unused: PG_USE_SSL=false connects without TLS"}},
		{"ClientCertificateWithoutSSL", []string{"PG_SSL_CERT=" + b.certPath, "PG_SSL_KEY=" + b.keyPath},
			[]string{"PG_SSL_CERT is set but unused: PG_USE_SSL=false connects without TLS",
				"PG_SSL_KEY is set but unused: PG_USE_SSL=false connects without TLS"}},
		{"CAWithoutVerification", []string{"PG_USE_SSL=true", "PG_SSL_REJECT_UNAUTHORIZED=false", "PG_SSL_ROOT_CERT=" + b.caPath},
			[]string{"PG_SSL_ROOT_CERT is set but unused: PG_SSL_REJECT_UNAUTHORIZED=false accepts any " +
				"server certificate without verifying it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, mustLoad(t, tc.environ...).Warnings())
		})
	}
}

func TestPGServers(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name    string
		environ []string
		want    string
	}{
		{"OneHost", nil, "localhost port 5432"},
		{"HostsSharingAPort", []string{"PG_HOST=127.0.0.2,127.0.0.3", "PG_PORT=5433"}, "127.0.0.2, 127.0.0.3 port 5433"},
		{"OnePortPerHost", []string{"PG_HOST=db1,db2", "PG_PORT=5432,5433"}, "db1 port 5432, db2 port 5433"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := mustLoad(t, tc.environ...)
			require.Equal(t, tc.want, c.PGServers())
		})
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

// tlsBundle is a CA and a certificate it issued for localhost, as PEM and as files.
type tlsBundle struct {
	ca                        *pgtest.CA
	certPEM, keyPEM           []byte
	dir                       string
	caPath, certPath, keyPath string
}

func newTLSBundle(t *testing.T) *tlsBundle {
	t.Helper()
	b := &tlsBundle{ca: pgtest.NewCA(t), dir: t.TempDir()}
	b.certPEM, b.keyPEM = b.ca.Issue(t, "localhost")
	write := func(name string, data []byte) string {
		p := filepath.Join(b.dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}
	b.caPath, b.certPath, b.keyPath = write("ca.pem", b.ca.CertPEM), write("cert.pem", b.certPEM), write("key.pem", b.keyPEM)
	return b
}

func mustDecode(t *testing.T, pemText []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(pemText)
	require.NotNil(t, block)
	return block.Bytes
}

// TestConnectTimeout: each connection attempt waits DB_CONNECTION_TIMEOUT rounded up to
// whole seconds, at least one, the value the DSN's connect_timeout says.
func TestConnectTimeout(t *testing.T) {
	t.Parallel()
	for ms, want := range map[string]time.Duration{
		"1": time.Second, "300": time.Second, "1000": time.Second, "1500": 2 * time.Second, "2001": 3 * time.Second,
	} {
		c := mustLoad(t, "DB_CONNECTION_TIMEOUT="+ms)
		require.Equal(t, want, c.ConnectTimeout(), ms)
		require.Contains(t, c.PGConnString(), fmt.Sprintf("connect_timeout=%d ", int(want/time.Second)), ms)
	}
}

// TestInflightDeadline: LIBQUEEN_INFLIGHT_DEADLINE_MS, at least 2000 (a warning says
// when it was raised), else DB_STATEMENT_TIMEOUT + 5000, else no limit, as the Queen
// 1.x brokers derive it.
func TestInflightDeadline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		environ []string
		want    time.Duration
		// warnings: the start of each warning about the deadline.
		warnings []string
	}{
		{nil, 35 * time.Second, nil},
		{[]string{"DB_STATEMENT_TIMEOUT=1000"}, 6 * time.Second, nil},
		{[]string{"DB_STATEMENT_TIMEOUT=0"}, 0, nil},
		{[]string{"LIBQUEEN_INFLIGHT_DEADLINE_MS=40000"}, 40 * time.Second, nil},
		{[]string{"LIBQUEEN_INFLIGHT_DEADLINE_MS=8000"}, 8 * time.Second,
			[]string{"LIBQUEEN_INFLIGHT_DEADLINE_MS=8000 is not above DB_STATEMENT_TIMEOUT=30000: a statement still running after 8s"}},
		{[]string{"DB_STATEMENT_TIMEOUT=0", "LIBQUEEN_INFLIGHT_DEADLINE_MS=9000"}, 9 * time.Second,
			[]string{"LIBQUEEN_INFLIGHT_DEADLINE_MS=9000 with DB_STATEMENT_TIMEOUT=0: a statement still running after 9s"}},
		{[]string{"DB_STATEMENT_TIMEOUT=1000", "LIBQUEEN_INFLIGHT_DEADLINE_MS=500"}, 2 * time.Second,
			[]string{"LIBQUEEN_INFLIGHT_DEADLINE_MS=500 is raised to 2000, its minimum"}},
		{[]string{"LIBQUEEN_INFLIGHT_DEADLINE_MS=500"}, 2 * time.Second, []string{
			"LIBQUEEN_INFLIGHT_DEADLINE_MS=500 is raised to 2000, its minimum",
			"LIBQUEEN_INFLIGHT_DEADLINE_MS=2000 is not above DB_STATEMENT_TIMEOUT=30000"}},
	} {
		c := mustLoad(t, tc.environ...)
		require.Equal(t, tc.want, c.InflightDeadline(), "%v", tc.environ)
		var got []string
		for _, w := range c.Warnings() {
			require.NotContains(t, w, "LIBQUEEN_INFLIGHT_DEADLINE_MS is accepted", "a setting, not an unused variable")
			if strings.Contains(w, "LIBQUEEN_INFLIGHT_DEADLINE_MS") {
				got = append(got, w)
			}
		}
		require.Len(t, got, len(tc.warnings), "%v: %q", tc.environ, got)
		for _, w := range tc.warnings {
			require.True(t, slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }),
				"%v: no warning starts with %q in %q", tc.environ, w, got)
		}
	}
}
