package daemon_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/testlog"
)

// TestLogLinesHaveEachKeyOnce runs a broker at LOG_LEVEL=debug through a short life
// that makes most components log (boot warnings, JWKS, requests of every kind, a
// reload, the drain) and requires every JSON line to hold each key once, at every
// level of nesting: most log pipelines reject or silently collapse duplicate keys.
func TestLogLinesHaveEachKeyOnce(t *testing.T) {
	t.Parallel()
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]any{
			"kty": "OKP", "crv": "Ed25519", "kid": "ed-1",
			"x": base64.RawURLEncoding.EncodeToString(edKey.Public().(ed25519.PublicKey)),
		}}})
	}))
	t.Cleanup(jwks.Close)

	var logs testlog.Buffer
	hup := make(chan os.Signal, 1)
	srv := daemontest.Start(t, daemontest.Options{Logs: &logs, Reload: hup, Env: []string{"LOG_LEVEL=debug", "DB_POOL_SIZE=4",
		"JWT_ENABLED=true", "JWT_ALGORITHM=EdDSA", "JWT_JWKS_URL=" + jwks.URL,
		"NUM_WORKERS=4", "QUEEN_SHUTDOWN_TIMOUT=1s", "QUEEN_ENV_FILES=/nonexistent/queen.env"}})
	base := srv.URL

	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"sub": "svc", "role": "admin", "exp": time.Now().Add(time.Hour).Unix()})
	tok.Header["kid"] = "ed-1"
	token, err := tok.SignedString(edKey)
	require.NoError(t, err)
	call := func(method, path, body, token string) int {
		req, err := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, call(http.MethodGet, "/health/ready", "", ""))
	require.Equal(t, http.StatusOK, call(http.MethodGet, "/metrics/prometheus", "", ""))
	require.Equal(t, http.StatusUnauthorized, call(http.MethodGet, "/api/v1/resources/queues", "", ""))
	require.Equal(t, http.StatusCreated, call(http.MethodPost, "/api/v1/push", `{"items":[{"queue":"keys","payload":1}]}`, token))
	require.Equal(t, http.StatusOK, call(http.MethodGet, "/api/v1/pop/queue/keys?autoAck=true", "", token))
	require.Equal(t, http.StatusBadRequest, call(http.MethodPost, "/api/v1/push", `{"items":`, token))
	require.Equal(t, http.StatusNotFound, call(http.MethodGet, "/api/v1/no/such/route", "", token))
	hup <- syscall.SIGHUP
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), `"msg":"reloaded: nothing to apply"`) },
		10*time.Second, 10*time.Millisecond)
	require.NoError(t, srv.Stop())

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Greater(t, len(lines), 20, "a run that logs little checks little:\n%s", logs.String())
	components := make(map[string]bool)
	for i, line := range lines {
		dups, err := duplicateKeys([]byte(line))
		require.NoError(t, err, "line %d is not one JSON object: %s", i+1, line)
		require.Empty(t, dups, "line %d repeats keys: %s", i+1, line)
		var rec struct {
			Msg       string `json:"msg"`
			Component string `json:"component"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		components[rec.Component] = true
		if rec.Msg == "http request" {
			require.Equal(t, "httpapi", rec.Component, line)
		}
		if strings.HasPrefix(rec.Msg, "JWKS") {
			require.Equal(t, "jwks", rec.Component, line)
		}
	}
	for _, c := range []string{"httpapi", "jwks", "reload", "broker"} {
		require.True(t, components[c], "no line of component %s; the run did not exercise it", c)
	}
	require.Contains(t, logs.String(), `"msg":"http request"`)
	require.Contains(t, logs.String(), `"variable":"QUEEN_SHUTDOWN_TIMOUT"`)
}

func TestDuplicateKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, line string
		want       []string
	}{
		{"None", `{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]}`, nil},
		{"TopLevel", `{"component":"http","msg":"x","component":"httpapi"}`, []string{"component"}},
		{"Nested", `{"g":{"k":1,"k":2}}`, []string{"g.k"}},
		{"InArray", `{"l":[{"k":1,"k":2}]}`, []string{"l[].k"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := duplicateKeys([]byte(tc.line))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	_, err := duplicateKeys([]byte(`{"a":`))
	require.Error(t, err)
	_, err = duplicateKeys([]byte(`{"a":1} {"b":2}`))
	require.Error(t, err, "one object per line")
}

// duplicateKeys walks one JSON value token by token (decoding into a map would keep
// the last of two equal keys and hide the first) and returns the dotted path of every
// key that repeats within its object.
func duplicateKeys(line []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var dups []string
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := make(map[string]bool)
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k := kt.(string)
				if seen[k] {
					dups = append(dups, path+k)
				}
				seen[k] = true
				if err := walk(path + k + "."); err != nil {
					return err
				}
			}
		case json.Delim('['):
			for dec.More() {
				if err := walk(strings.TrimSuffix(path, ".") + "[]."); err != nil {
					return err
				}
			}
		default:
			return nil
		}
		_, err = dec.Token() // the closing delimiter
		return err
	}
	if err := walk(""); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	return dups, nil
}
