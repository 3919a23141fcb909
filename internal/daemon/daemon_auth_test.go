package daemon_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemon"
	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/testlog"
)

const authTestSecret = "daemon-test-secret-from-a-credential-file"

// TestAuthEnabled boots a daemon with JWT_ENABLED=true, JWT_ALGORITHM=auto, the HS256
// secret from a systemd credential and an Ed25519 key from a local JWKS server: the
// boot log states the mode (without the secret), the JWKS is fetched at start, public
// routes stay open, protected ones want a token, and pushes carry the token's sub.
func TestAuthEnabled(t *testing.T) {
	t.Parallel()
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	var fetches atomic.Int64
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]any{
			"kty": "OKP", "crv": "Ed25519", "kid": "ed-1",
			"x": base64.RawURLEncoding.EncodeToString(edKey.Public().(ed25519.PublicKey)),
		}}})
	}))
	t.Cleanup(jwks.Close)
	creds := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(creds, "JWT_SECRET"), []byte(authTestSecret+"\n"), 0o600))

	var logs testlog.Buffer
	srv := daemontest.Start(t, daemontest.Options{Logs: &logs, Env: []string{"LOG_LEVEL=info", "DB_POOL_SIZE=4",
		"JWT_ENABLED=true", "JWT_ALGORITHM=auto", "JWT_JWKS_URL=" + jwks.URL, "JWT_AUDIENCE=queen",
		"CREDENTIALS_DIRECTORY=" + creds}})
	base := srv.URL

	require.Eventually(t, func() bool { return fetches.Load() >= 1 }, 5*time.Second, 10*time.Millisecond, "JWKS fetched at start")
	boot := logs.String()
	require.Contains(t, boot, `"msg":"authentication on: bearer JWT required"`)
	require.Contains(t, boot, `"auth":"jwt"`)
	require.Contains(t, boot, `"accepted_algorithms":["HS256","HS384","HS512","RS256","RS384","RS512","ES256","EdDSA"]`)
	require.NotContains(t, boot, "serving WITHOUT authentication")
	require.NotContains(t, boot, authTestSecret)

	call := func(method, path, body, token string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	mint := func(method jwt.SigningMethod, key any, kid, sub, role string) string {
		tok := jwt.NewWithClaims(method, jwt.MapClaims{"sub": sub, "role": role, "aud": "queen", "exp": time.Now().Add(time.Hour).Unix()})
		if kid != "" {
			tok.Header["kid"] = kid
		}
		s, err := tok.SignedString(key)
		require.NoError(t, err)
		return s
	}
	hsWriter := mint(jwt.SigningMethodHS256, []byte(authTestSecret), "", "svc-hs", "read-write")
	edWriter := mint(jwt.SigningMethodEdDSA, edKey, "ed-1", "svc-ed", "read-write")

	status, _ := call(http.MethodGet, "/health", "", "")
	require.Equal(t, http.StatusOK, status)
	status, body := call(http.MethodPost, "/api/v1/push", `{"items":[{"queue":"authd","payload":1}]}`, "")
	require.Equal(t, http.StatusUnauthorized, status, body)
	require.JSONEq(t, `{"error":"Authentication required","code":"unauthenticated"}`, body)
	status, body = call(http.MethodGet, "/api/v1/system/maintenance", "", hsWriter)
	require.Equal(t, http.StatusForbidden, status, body)

	status, body = call(http.MethodPost, "/api/v1/push", `{"items":[{"queue":"authd","payload":1,"producerSub":"x"}]}`, hsWriter)
	require.Equal(t, http.StatusCreated, status, body)
	status, body = call(http.MethodPost, "/api/v1/push", `{"items":[{"queue":"authd","payload":2}]}`, edWriter)
	require.Equal(t, http.StatusCreated, status, body)
	status, body = call(http.MethodGet, "/api/v1/pop/queue/authd?batch=10&autoAck=true", "", edWriter)
	require.Equal(t, http.StatusOK, status, body)
	var pop struct {
		Messages []struct {
			ProducerSub *string `json:"producerSub"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &pop))
	require.Len(t, pop.Messages, 2)
	require.Equal(t, "svc-hs", *pop.Messages[0].ProducerSub)
	require.Equal(t, "svc-ed", *pop.Messages[1].ProducerSub)
	for _, tok := range []string{hsWriter, edWriter} {
		require.NotContains(t, logs.String(), strings.Split(tok, ".")[2], "a token signature reached the log")
	}
}

// TestAuthConfigurationRefused: a configuration that config.Load accepts but the
// verifier cannot honour stops the daemon before it binds or connects.
func TestAuthConfigurationRefused(t *testing.T) {
	t.Parallel()
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(edKey.Public())
	require.NoError(t, err)
	edPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	var logs testlog.Buffer
	err = daemontest.StartError(t, daemontest.Options{NoDatabase: true, Logs: &logs,
		Env: []string{"JWT_ENABLED=true", "JWT_ALGORITHM=RS256", "JWT_PUBLIC_KEY=" + edPEM}})
	require.ErrorIs(t, err, daemon.ErrUnsupportedConfig)
	require.ErrorContains(t, err, "JWT_PUBLIC_KEY is an Ed25519 key, which cannot verify JWT_ALGORITHM=RS256 tokens")
}

// TestAuthOffIsStatedAtBoot: with authentication off, the boot log says so, as a
// warning when the address is reachable from other hosts.
func TestAuthOffIsStatedAtBoot(t *testing.T) {
	t.Parallel()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadPort := strconv.Itoa(dead.Addr().(*net.TCPAddr).Port)
	require.NoError(t, dead.Close())
	for _, tc := range []struct {
		name, bind, want string
	}{
		{"Loopback", "127.0.0.1:0", `"level":"INFO","msg":"authentication off (JWT_ENABLED=false): every route is open"`},
		{"AllAddresses", "0.0.0.0:0", `"level":"WARN","msg":"serving WITHOUT authentication on a non-loopback address`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", tc.bind)
			require.NoError(t, err)
			var logs testlog.Buffer
			srv := daemontest.Start(t, daemontest.Options{NoDatabase: true, NoWait: true, Listener: ln, Logs: &logs,
				Env: []string{"PG_HOST=127.0.0.1", "PG_PORT=" + deadPort, "LOG_LEVEL=info"}})
			require.Eventually(t, func() bool { return strings.Contains(logs.String(), tc.want) },
				10*time.Second, 10*time.Millisecond, "boot log:\n%s", logs.String())
			require.Contains(t, logs.String(), `"auth":"off"`)
			require.NoError(t, srv.Stop())
		})
	}
}
