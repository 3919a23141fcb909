package store

import (
	"crypto/tls"

	"github.com/jackc/pgx/v5/pgconn"
)

// TLS material that cannot travel in a connection string: pgx reads sslrootcert,
// sslcert and sslkey as file paths, while queen's settings may hold PEM text. The
// connection string chooses the mode (sslmode) and Open puts this material on the
// TLS configurations pgx built from it.

// applyTLS gives every TLS configuration of cfg, the first host's and each fallback's
// (pgx makes one per host of a list, and per mode for sslmode=prefer or allow), the
// trust anchors and the client certificate of opts. Everything else pgx set is kept:
// under sslmode=verify-full that is ServerName, the host each configuration
// connects to, which the certificate must name; under require, InsecureSkipVerify;
// under verify-ca, its chain-only check, which reads RootCAs when it runs. A nil
// configuration (sslmode=disable, a Unix socket, prefer's plain-text fallback) stays
// nil: there is no TLS to configure.
func applyTLS(cfg *pgconn.Config, opts Options) {
	if opts.TLSRootCAs == nil && opts.TLSClientCert == nil {
		return
	}
	apply := func(c *tls.Config) {
		if c == nil {
			return
		}
		if opts.TLSRootCAs != nil {
			c.RootCAs = opts.TLSRootCAs
		}
		if opts.TLSClientCert != nil {
			c.Certificates = []tls.Certificate{*opts.TLSClientCert}
		}
	}
	apply(cfg.TLSConfig)
	for _, fb := range cfg.Fallbacks {
		apply(fb.TLSConfig)
	}
}
