package store_test

import (
	"context"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// pingWith opens a store configured exactly as the daemon configures it from environ
// (the connection string and the TLS material of config.Load) and pings it.
func pingWith(t *testing.T, environ ...string) error {
	t.Helper()
	cfg, err := config.Load(environ)
	require.NoError(t, err)
	st, err := store.Open(store.Options{ConnString: cfg.PGConnString(), MaxConns: 2,
		ConnectTimeout: cfg.DBConnectionTimeout, TLSRootCAs: cfg.PGRootCAs(), TLSClientCert: cfg.PGClientCert()})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	return st.Ping(ctx)
}

// TestTLS runs the broker's TLS settings against a server of its own: ssl=on with a
// certificate for localhost and 127.0.0.1 from a CA the test makes, also listening on
// 127.0.0.2, which the certificate does not name; role queen_cert must log in with a
// client certificate from the same CA (pg_hba.conf method cert).
func TestTLS(t *testing.T) {
	t.Parallel()

	srv, ca, admin := pgtest.StartTLSTestServer(t)

	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, ca.CertPEM, 0o600))
	clientCert, clientKey := ca.Issue(t, "queen_cert")
	otherCA := pgtest.NewCA(t)
	env := func(vars ...string) []string {
		// Earlier entries win: vars override the base.
		return append(vars, "PG_HOST=localhost", "PG_PORT="+strconv.Itoa(srv.Port()), "PG_DB=postgres",
			"PG_USER=postgres", "PG_PASSWORD=", "PG_USE_SSL=true")
	}

	for _, tc := range []struct {
		name    string
		environ []string
	}{
		{"RightCAAsPath", env("PG_SSL_ROOT_CERT=" + caFile)},
		{"RightCAAsPEMText", env("PG_SSL_ROOT_CERT=" + string(ca.CertPEM))},
		{"ByIPAddressTheCertificateNames", env("PG_HOST=127.0.0.1", "PG_SSL_ROOT_CERT="+caFile)},
		// verify-full checks each host of a list by its own name: 127.0.0.2 is refused,
		// localhost then accepted.
		{"HostListSkipsTheHostTheCertificateDoesNotName", env("PG_HOST=127.0.0.2,localhost", "PG_SSL_ROOT_CERT="+caFile)},
		{"UnverifiedWhenRejectUnauthorizedIsFalse", env("PG_SSL_REJECT_UNAUTHORIZED=false")},
		{"ClientCertificate", env("PG_USER=queen_cert", "PG_SSL_ROOT_CERT="+caFile,
			"PG_SSL_CERT="+string(clientCert), "PG_SSL_KEY="+string(clientKey))},
	} {
		t.Run("Connects"+tc.name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, pingWith(t, tc.environ...))
		})
	}

	refused := func(t *testing.T, err error) {
		t.Helper()
		require.ErrorIs(t, err, queue.ErrUnavailable, "a refused connection is the database being away")
		var connectErr *pgconn.ConnectError
		require.ErrorAs(t, err, &connectErr)
	}
	t.Run("RefusesAnotherCA", func(t *testing.T) {
		t.Parallel()
		err := pingWith(t, env("PG_SSL_ROOT_CERT="+string(otherCA.CertPEM))...)
		refused(t, err)
		require.ErrorAs(t, err, &x509.UnknownAuthorityError{})
	})
	t.Run("RefusesAWrongHostName", func(t *testing.T) {
		t.Parallel()
		err := pingWith(t, env("PG_HOST=127.0.0.2", "PG_SSL_ROOT_CERT="+caFile)...)
		refused(t, err)
		var hostErr x509.HostnameError
		require.ErrorAs(t, err, &hostErr)
		require.Equal(t, "127.0.0.2", hostErr.Host)
	})
	t.Run("RefusesWithoutCAByDefault", func(t *testing.T) {
		t.Parallel()
		err := pingWith(t, env()...) // the system's CAs do not know the test's
		refused(t, err)
		require.ErrorAs(t, err, &x509.UnknownAuthorityError{})
	})
	t.Run("RefusesTheCertRoleWithoutClientCertificate", func(t *testing.T) {
		t.Parallel()
		err := pingWith(t, env("PG_USER=queen_cert", "PG_SSL_ROOT_CERT="+caFile)...)
		refused(t, err)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr)
		require.Equal(t, "28000", pgErr.Code, "invalid_authorization_specification")
	})
	t.Run("RefusesAPlainTextServer", func(t *testing.T) {
		t.Parallel()
		// The shared test server has no TLS: verify-full never falls back to plain text.
		u := pgtest.NewDBURL(t)
		cfg, err := pgx.ParseConfig(u)
		require.NoError(t, err)
		err = pingWith(t, "PG_HOST="+cfg.Host, "PG_PORT="+strconv.Itoa(int(cfg.Port)), "PG_DB="+cfg.Database,
			"PG_USER="+cfg.User, "PG_PASSWORD="+cfg.Password, "PG_USE_SSL=true", "PG_SSL_ROOT_CERT="+caFile)
		refused(t, err)
		require.False(t, errors.Is(err, context.DeadlineExceeded), "refused at once, not timed out")
	})

	t.Run("EveryConnectionOfTheBrokerIsEncrypted", func(t *testing.T) {
		t.Parallel()
		require.NoError(t, pingWith(t, env("PG_SSL_ROOT_CERT="+caFile, "PG_HOST=127.0.0.1")...))
		var n int
		var allTLS bool
		require.NoError(t, admin.QueryRow(t.Context(), `SELECT count(*), coalesce(bool_and(s.ssl), false)
			FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
			WHERE a.application_name = 'queen' AND a.client_addr IS NOT NULL`).Scan(&n, &allTLS))
		require.Positive(t, n)
		require.True(t, allTLS)
	})
}
