package config_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/config"
)

func TestLoadRefusesBadSettings(t *testing.T) {
	t.Parallel()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalECPrivateKey(ec)
	require.NoError(t, err)
	ecPEM := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	secret := "0123456789abcdef0123456789abcdef"
	base := []string{"QUEEN_PROXY_LOGIN=false"}

	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"LoginNotBoolean", []string{"QUEEN_PROXY_LOGIN=maybe"}, "QUEEN_PROXY_LOGIN"},
		{"ECBrokerKey", append(base, "QUEEN_PROXY_BROKER_AUTH=jwt", "QUEEN_PROXY_BROKER_JWT_KEY="+ecPEM), "QUEEN_PROXY_BROKER_JWT_KEY"},
		{"SessionKeyIsBrokerKey", []string{"QUEEN_PROXY_BROKER_AUTH=jwt", "QUEEN_PROXY_BROKER_JWT_KEY=" + secret,
			"QUEEN_PROXY_SESSION_KEY=" + secret}, "QUEEN_PROXY_SESSION_KEY"},
		{"NonHTTPBackend", append(base, "QUEEN_PROXY_UPSTREAMS=ftp://broker:6632"), "QUEEN_PROXY_UPSTREAMS"},
		{"LoginWithoutSessionKey", nil, "QUEEN_PROXY_SESSION_KEY"},
		{"UnknownVariable", append(base, "QUEEN_PROXY_UPSTREAM=http://x"), "QUEEN_PROXY_UPSTREAM:"},
		{"BadDuration", append(base, "QUEEN_PROXY_AUTH_CACHE_TTL=5"), "QUEEN_PROXY_AUTH_CACHE_TTL"},
		{"JWTWithoutKey", append(base, "QUEEN_PROXY_BROKER_AUTH=jwt"), "QUEEN_PROXY_BROKER_JWT_KEY"},
		{"HalfTLS", append(base, "QUEEN_PROXY_TLS_CERT_FILE=/x.pem"), "QUEEN_PROXY_TLS_CERT_FILE"},
		{"ShutdownDelayNotBelowTimeout", append(base, "QUEEN_PROXY_SHUTDOWN_DELAY=20s"), "QUEEN_PROXY_SHUTDOWN_DELAY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := config.Load(tc.env)
			require.Error(t, err)
			require.True(t, config.IsConfigError(err))
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), secret, "a secret is printed")
		})
	}
}

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load([]string{"QUEEN_PROXY_LOGIN=false", "QUEEN_SERVER_URL=http://10.0.0.1:6632/"})
	require.NoError(t, err)
	require.Equal(t, 6640, cfg.Port)
	require.Equal(t, "127.0.0.1:6641", cfg.AdminListen)
	require.Equal(t, "X-Queen-Tenant", cfg.TenancyHeader)
	require.Equal(t, "http://10.0.0.1:6632", cfg.Backends[0].String())
	require.EqualValues(t, 16<<20, cfg.MaxBodyBytes)
}
