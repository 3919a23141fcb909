package daemon

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
)

func TestPGConnectHint(t *testing.T) {
	t.Parallel()

	ca := pgtest.NewCA(t)
	certPEM, _ := ca.Issue(t, "localhost")
	block, _ := pem.Decode(certPEM)
	leaf, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	verify := func(o x509.VerifyOptions) error {
		_, err := leaf.Verify(o)
		require.Error(t, err)
		// As pgx and crypto/tls wrap it.
		return fmt.Errorf("failed to connect: %w", errors.Join(fmt.Errorf("tls error: %w",
			&tls.CertificateVerificationError{Err: err})))
	}

	for _, tc := range []struct {
		name string
		err  error
		want string // "" means no hint
	}{
		{"UnknownAuthority", verify(x509.VerifyOptions{Roots: x509.NewCertPool()}),
			"not signed by a CA the broker trusts; set PG_SSL_ROOT_CERT"},
		{"WrongHostName", verify(x509.VerifyOptions{Roots: roots, DNSName: "db.example"}),
			"does not name the host connected to (x509: certificate is valid for localhost, not db.example)"},
		{"Expired", verify(x509.VerifyOptions{Roots: roots, CurrentTime: time.Now().Add(48 * time.Hour)}),
			"the server's certificate is not valid (x509: certificate has expired"},
		{"ServerRefusedTheClientCertificate", fmt.Errorf("failed to receive message: %w", tls.AlertError(48)),
			"it may require a client certificate (PG_SSL_CERT, PG_SSL_KEY)"},
		{"NotTLS", fmt.Errorf("failed to connect: %w", io.ErrUnexpectedEOF), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hint := pgConnectHint(tc.err)
			if tc.want == "" {
				require.Empty(t, hint)
				return
			}
			require.Contains(t, hint, tc.want)
		})
	}
}
