package store

import (
	"crypto/tls"
	"crypto/x509"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

func TestApplyTLS(t *testing.T) {
	t.Parallel()

	pool := x509.NewCertPool()
	cert := &tls.Certificate{Certificate: [][]byte{{1, 2, 3}}}
	opts := Options{TLSRootCAs: pool, TLSClientCert: cert}
	parse := func(t *testing.T, dsn string) *pgconn.Config {
		t.Helper()
		cfg, err := pgconn.ParseConfig(dsn)
		require.NoError(t, err)
		return cfg
	}

	t.Run("EveryHostOfAListKeepsItsServerName", func(t *testing.T) {
		t.Parallel()
		cfg := parse(t, "host=db1,db2,/run/postgresql port=5432,5433,5434 sslmode=verify-full")
		applyTLS(cfg, opts)
		require.Len(t, cfg.Fallbacks, 2)
		for i, c := range []*tls.Config{cfg.TLSConfig, cfg.Fallbacks[0].TLSConfig} {
			require.NotNil(t, c)
			require.Equal(t, []string{"db1", "db2"}[i], c.ServerName, "verify-full checks each host's own name")
			require.Same(t, pool, c.RootCAs)
			require.Equal(t, []tls.Certificate{*cert}, c.Certificates)
			require.False(t, c.InsecureSkipVerify)
		}
		require.Nil(t, cfg.Fallbacks[1].TLSConfig, "no TLS over a Unix socket")
	})

	t.Run("RequireStaysUnverified", func(t *testing.T) {
		t.Parallel()
		cfg := parse(t, "host=db1 sslmode=require")
		applyTLS(cfg, opts)
		require.True(t, cfg.TLSConfig.InsecureSkipVerify)
		require.Equal(t, []tls.Certificate{*cert}, cfg.TLSConfig.Certificates)
	})

	t.Run("DisableHasNothingToConfigure", func(t *testing.T) {
		t.Parallel()
		cfg := parse(t, "host=db1,db2 sslmode=disable")
		applyTLS(cfg, opts)
		require.Nil(t, cfg.TLSConfig)
		require.Nil(t, cfg.Fallbacks[0].TLSConfig)
	})

	t.Run("NoMaterialKeepsWhatPgxBuilt", func(t *testing.T) {
		t.Parallel()
		cfg := parse(t, "host=db1 sslmode=verify-full")
		applyTLS(cfg, Options{})
		require.Nil(t, cfg.TLSConfig.RootCAs, "nil RootCAs: the system's CAs")
		require.Empty(t, cfg.TLSConfig.Certificates)
	})
}
