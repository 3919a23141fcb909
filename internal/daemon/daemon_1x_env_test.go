package daemon_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/testlog"
)

// TestQueen1xSecuritySettings boots a daemon with the security settings of a Queen 1.x
// deployment: JWT_ALGORITHM=HS512, a renamed write-only role and the boolean
// QUEEN_TENANCY_HEADER=true. HS512 tokens verify and HS256 ones are refused; the
// write-only token pushes and is 403 on pop; tenancy is on with X-Queen-Tenant; the
// boot log carries the 1.x warnings (boolean tenancy header, subscription-mode
// default).
func TestQueen1xSecuritySettings(t *testing.T) {
	t.Parallel()
	const secret = "a-queen-1x-hs512-secret-of-more-than-64-bytes-for-the-daemon-test"
	var logs testlog.Buffer
	srv := daemontest.Start(t, daemontest.Options{Logs: &logs, Env: []string{"LOG_LEVEL=info", "DB_POOL_SIZE=4",
		"JWT_ENABLED=true", "JWT_ALGORITHM=HS512", "JWT_SECRET=" + secret, "JWT_ROLE_WRITE_ONLY=producer",
		"QUEEN_TENANCY_HEADER=true"}})

	boot := logs.String()
	require.Contains(t, boot, `"accepted_algorithms":["HS512"]`)
	require.Contains(t, boot, "QUEEN_TENANCY_HEADER=true is read as the Queen 1.x boolean")
	require.Contains(t, boot, "DEFAULT_SUBSCRIPTION_MODE is unset in what looks like a Queen 1.x environment")
	require.NotContains(t, boot, secret)

	mint := func(method jwt.SigningMethod, role string) string {
		tok := jwt.NewWithClaims(method, jwt.MapClaims{"sub": "svc", "role": role, "exp": time.Now().Add(time.Hour).Unix()})
		s, err := tok.SignedString([]byte(secret))
		require.NoError(t, err)
		return s
	}
	call := func(method, path, body, token string, header ...string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}

	producer := mint(jwt.SigningMethodHS512, "producer")
	status, body := call(http.MethodPost, "/api/v1/push", `{"items":[{"queue":"q1x","payload":{"n":1}}]}`, producer)
	require.True(t, status >= 200 && status < 300, "write-only push: %d %s", status, body)
	status, body = call(http.MethodGet, "/api/v1/pop/queue/q1x", "", producer)
	require.Equal(t, http.StatusForbidden, status, body)
	require.Contains(t, body, `"error":"Insufficient permissions"`)

	status, body = call(http.MethodGet, "/api/v1/resources/queues", "", mint(jwt.SigningMethodHS256, "admin"))
	require.Equal(t, http.StatusUnauthorized, status, body)
	require.Contains(t, body, `"error":"Unsupported token algorithm"`)

	// Tenancy is on, reading X-Queen-Tenant: a value that is not a tenant id is 400.
	admin := mint(jwt.SigningMethodHS512, "admin")
	status, body = call(http.MethodGet, "/api/v1/resources/queues", "", admin, "X-Queen-Tenant", "Not A Tenant")
	require.Equal(t, http.StatusBadRequest, status, body)
	require.Contains(t, body, "X-Queen-Tenant")
	status, body = call(http.MethodGet, "/api/v1/resources/queues", "", admin, "X-Queen-Tenant", "acme")
	require.Equal(t, http.StatusOK, status, body)
}
