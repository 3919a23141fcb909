package config

import (
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
