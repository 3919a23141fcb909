package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestValidateCombinations(t *testing.T) {
	t.Parallel()

	const key = "-----BEGIN PUBLIC KEY-----\\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\\n-----END PUBLIC KEY-----"
	for _, tc := range []struct {
		name    string
		environ []string
		want    string // "" means valid
	}{
		{"PopWaitInitialAboveMax", []string{"POP_WAIT_INITIAL_INTERVAL_MS=2000"},
			`config: POP_WAIT_INITIAL_INTERVAL_MS="2000": must not exceed POP_WAIT_MAX_INTERVAL_MS="1000"`},
		{"PopWaitEqualIsFine", []string{"POP_WAIT_INITIAL_INTERVAL_MS=1000"}, ""},
		{"DefaultTimeoutAboveCap", []string{"DEFAULT_TIMEOUT=200000"},
			`config: DEFAULT_TIMEOUT="200000": must not exceed QUEEN_MAX_POP_TIMEOUT_MS="120000"`},
		{"RaisedCapAllowsLongerDefault", []string{"DEFAULT_TIMEOUT=200000", "QUEEN_MAX_POP_TIMEOUT_MS=300000"}, ""},
		{"DefaultBatchAboveMax", []string{"DEFAULT_BATCH_SIZE=50", "QUEEN_MAX_POP_BATCH=10"},
			`config: DEFAULT_BATCH_SIZE="50": must not exceed QUEEN_MAX_POP_BATCH="10"`},
		{"ShutdownDelayBelowTimeout", []string{"QUEEN_SHUTDOWN_DELAY=5s"}, ""},
		{"ShutdownDelayNotBelowTimeout", []string{"QUEEN_SHUTDOWN_DELAY=20s"},
			`config: QUEEN_SHUTDOWN_DELAY="20s": must be less than QUEEN_SHUTDOWN_TIMEOUT="20s"`},
		{"ShutdownDelayWithLongerTimeout", []string{"QUEEN_SHUTDOWN_DELAY=20s", "QUEEN_SHUTDOWN_TIMEOUT=25s"}, ""},
		{"JWTOffNeedsNothing", []string{"JWT_ALGORITHM=RS256"}, ""},
		{"HS256NeedsSecret", []string{"JWT_ENABLED=true"},
			`config: JWT_ALGORITHM="HS256": with JWT_ENABLED=true needs JWT_SECRET`},
		{"HS256NeedsSecretEvenWithJWKS", []string{"JWT_ENABLED=1", "JWT_JWKS_URL=https://idp.example/jwks"},
			"needs JWT_SECRET"},
		{"HS256WithSecret", []string{"JWT_ENABLED=yes", "JWT_SECRET=s"}, ""},
		{"RS256NeedsKeySource", []string{"JWT_ENABLED=on", "JWT_ALGORITHM=RS256", "JWT_SECRET=s"},
			`config: JWT_ALGORITHM="RS256": with JWT_ENABLED=true needs JWT_JWKS_URL or JWT_PUBLIC_KEY`},
		{"EdDSAWithPublicKey", []string{"JWT_ENABLED=true", "JWT_ALGORITHM=EdDSA", "JWT_PUBLIC_KEY=" + key}, ""},
		{"RS256WithJWKS", []string{"JWT_ENABLED=true", "JWT_ALGORITHM=RS256", "JWT_JWKS_URL=https://idp.example/jwks"}, ""},
		{"AutoNeedsAnyKey", []string{"JWT_ENABLED=true", "JWT_ALGORITHM=auto"},
			"needs JWT_SECRET, JWT_JWKS_URL or JWT_PUBLIC_KEY"},
		{"AutoWithJWKS", []string{"JWT_ENABLED=true", "JWT_ALGORITHM=auto", "JWT_JWKS_URL=http://idp/jwks"}, ""},
		{"OTLPClientCertNeedsKey", []string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=/c.pem"},
			`config: OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE="/c.pem": needs OTEL_EXPORTER_OTLP_CLIENT_KEY beside it`},
		{"OTLPTracesKeyNeedsCert", []string{"OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY=/k.pem"},
			"OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE"},
		{"OTLPBatchAboveQueue", []string{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE=4096"},
			`config: OTEL_BSP_MAX_EXPORT_BATCH_SIZE="4096": must not exceed OTEL_BSP_MAX_QUEUE_SIZE="2048"`},
		{"OTLPSamplerRatioAboveOne", []string{"OTEL_TRACES_SAMPLER_ARG=1.5"}, "must be between 0 and 1"},
		{"OTLPJSONProtocol", []string{"OTEL_EXPORTER_OTLP_PROTOCOL=http/json"}, "must be one of http/protobuf, grpc"},
		{"OTLPHeadersNotPairs", []string{"OTEL_EXPORTER_OTLP_HEADERS=token"}, "OTEL_EXPORTER_OTLP_HEADERS"},
		{"HostIPv4", []string{"HOST=127.0.0.2"}, ""},
		{"HostIPv6", []string{"HOST=::1"}, ""},
		{"HostIPv6Zone", []string{"HOST=fe80::1%eth0"}, ""},
		{"HostName", []string{"HOST=queen-0.queen.default.svc.cluster.local."}, ""},
		{"HostNumericName", []string{"HOST=999.1.1.1"},
			`config: HOST="999.1.1.1": not an IP address, nor a host name (its last label is a number)`},
		{"HostBracketed", []string{"HOST=[::1]"}, `config: HOST="[::1]": write an IPv6 address without brackets`},
		{"HostWithPort", []string{"HOST=127.0.0.1:6632"}, `config: HOST="127.0.0.1:6632": not an IP address, nor a host name`},
		{"HostIPv4Zone", []string{"HOST=10.0.0.1%eth0"}, "a zone (%) needs an IPv6 address"},
		{"HostLabelTooLong", []string{"HOST=" + strings.Repeat("a", 64) + ".example"}, "1–63 of them"},
		{"OTLPOn", []string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
			"OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20x,tenant=a", "OTEL_TRACES_SAMPLER=parentbased_traceidratio",
			"OTEL_TRACES_SAMPLER_ARG=0.01"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(tc.environ)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalid)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestValidateAfterChangingByHand(t *testing.T) {
	t.Parallel()

	c := mustLoad(t)
	require.NoError(t, c.Validate())
	c.PopWaitInitialInterval = 5 * time.Second
	c.JWTEnabled = true
	err := c.Validate()
	require.ErrorIs(t, err, ErrInvalid)
	require.Contains(t, err.Error(), `config: POP_WAIT_INITIAL_INTERVAL_MS="5000": must not exceed`)
	require.Contains(t, err.Error(), "needs JWT_SECRET")
}

// TestTracingSettingsPickTheTracesOnlyVariables: each OTEL_EXPORTER_OTLP_TRACES_* wins
// over its general variable, an unset one falls back to it, and an OTEL_* variable
// queen does not list is reported as unknown.
func TestTracingSettingsPickTheTracesOnlyVariables(t *testing.T) {
	t.Parallel()
	c, err := Load([]string{
		"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc", "OTEL_EXPORTER_OTLP_HEADERS=a=1,b=x%2Cy",
		"OTEL_EXPORTER_OTLP_TIMEOUT=2500", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION=gzip",
		"OTEL_PROPAGATORS=b3",
	})
	require.NoError(t, err)
	require.True(t, c.Tracing.Enabled())
	e := c.Tracing.Effective()
	require.Equal(t, "grpc", e.Protocol)
	require.Equal(t, "http://collector:4318", e.Endpoint)
	require.Equal(t, map[string]string{"a": "1", "b": "x,y"}, e.Headers)
	require.Equal(t, 2500*time.Millisecond, e.Timeout)
	require.Equal(t, "gzip", e.Compression)
	require.Len(t, c.UnknownVariables(), 1)
	require.Equal(t, "OTEL_PROPAGATORS", c.UnknownVariables()[0].Name)
	require.NotContains(t, c.String(), "x%2Cy", "headers are a secret: never printed")

	off, err := Load([]string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_SDK_DISABLED=true"})
	require.NoError(t, err)
	require.False(t, off.Tracing.Enabled())
}
