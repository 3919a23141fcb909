package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/auth"
)

// TestJWTAlgorithmsMatchTheVerifier: JWT_ALGORITHM accepts exactly the values the
// verifier knows (config is a leaf package and keeps its own copy of the list), and an
// enabled configuration of each one is a valid one for the verifier.
func TestJWTAlgorithmsMatchTheVerifier(t *testing.T) {
	t.Parallel()
	require.Equal(t, auth.Algorithms(), jwtAlgorithms())
	for _, alg := range jwtAlgorithms() {
		require.Equal(t, alg, mustLoad(t, "JWT_ALGORITHM="+alg).JWTAlgorithm)
	}
	require.Contains(t, loadErr(t, "JWT_ENABLED=true", "JWT_ALGORITHM=HS384"), "JWT_ALGORITHM=\"HS384\": with JWT_ENABLED=true needs JWT_SECRET")
	require.Contains(t, loadErr(t, "JWT_ENABLED=true", "JWT_ALGORITHM=ES256", "JWT_SECRET=x"),
		"JWT_ALGORITHM=\"ES256\": with JWT_ENABLED=true needs JWT_JWKS_URL or JWT_PUBLIC_KEY")
}
