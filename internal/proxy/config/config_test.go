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

// The proxy refuses the tenancy headers and the CORS origins the brokers refuse, and
// the headers it uses itself, naming the variable; the 1.x boolean true is
// X-Queen-Tenant, as at the brokers.
func TestLoadRefusesWhatTheBrokersRefuse(t *testing.T) {
	t.Parallel()
	base := []string{"QUEEN_PROXY_LOGIN=false"}
	for _, tc := range []struct{ name, env, want string }{
		{"Authorization", "QUEEN_TENANCY_HEADER=Authorization", "QUEEN_TENANCY_HEADER"},
		{"ContentType", "QUEEN_TENANCY_HEADER=content-type", "QUEEN_TENANCY_HEADER"},
		{"Forwarded", "QUEEN_TENANCY_HEADER=X-Forwarded-Tenant", "QUEEN_TENANCY_HEADER"},
		{"TheCellHeader", "QUEEN_TENANCY_HEADER=X-Queen-Cell", "QUEEN_TENANCY_HEADER"},
		{"FetchMetadata", "QUEEN_TENANCY_HEADER=Sec-Fetch-Site", "QUEEN_TENANCY_HEADER"},
		{"Underscore", "QUEEN_TENANCY_HEADER=X_Tenant", "QUEEN_TENANCY_HEADER"},
		{"TenancyOff", "QUEEN_TENANCY_HEADER=false", "QUEEN_TENANCY_HEADER"},
		{"NotAnOrigin", "QUEEN_PROXY_CORS_ALLOWED_ORIGINS=notaurl", "QUEEN_PROXY_CORS_ALLOWED_ORIGINS"},
		{"OriginWithPath", "QUEEN_PROXY_CORS_ALLOWED_ORIGINS=https://a.example,http://a.com/path", "QUEEN_PROXY_CORS_ALLOWED_ORIGINS"},
		{"OriginWithSlash", "QUEEN_PROXY_CORS_ALLOWED_ORIGINS=http://a.com/", "QUEEN_PROXY_CORS_ALLOWED_ORIGINS"},
		{"NotHTTP", "QUEEN_PROXY_CORS_ALLOWED_ORIGINS=ftp://a.com", "QUEEN_PROXY_CORS_ALLOWED_ORIGINS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := config.Load(append([]string{tc.env}, base...))
			require.Error(t, err)
			require.True(t, config.IsConfigError(err))
			require.Contains(t, err.Error(), "config: "+tc.want+":")
		})
	}

	cfg, err := config.Load(append([]string{"QUEEN_TENANCY_HEADER=true",
		"QUEEN_PROXY_CORS_ALLOWED_ORIGINS=https://a.example:8443, *"}, base...))
	require.NoError(t, err)
	require.Equal(t, "X-Queen-Tenant", cfg.TenancyHeader)
	require.Equal(t, []string{"https://a.example:8443", "*"}, cfg.CORSAllowedOrigins)
	cfg, err = config.Load(append([]string{"QUEEN_TENANCY_HEADER=X-Acme-Tenant"}, base...))
	require.NoError(t, err)
	require.Equal(t, "X-Acme-Tenant", cfg.TenancyHeader)
}
