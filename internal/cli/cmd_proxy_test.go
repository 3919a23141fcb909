package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/cli"
)

// Answers of a queen-proxy admin API, as it writes them.
const (
	adminTenant = `{"id":"acme","name":"Acme","status":"active","cell":"default","createdAt":"2026-01-02T03:04:05.123Z","updatedAt":"2026-01-02T03:04:05.123Z",` +
		`"limits":{"requestsPerSecond":12.5,"requestsBurst":200,"messagesPerSecond":1000,"messagesBurst":5000,"maxConcurrent":5,` +
		`"maxRequestBytes":16777216},"quotas":{"maxMessages":1000000,"maxBytes":1073741824,"maxQueues":7},` +
		`"usage":{"messages":0,"bytes":0,"queues":0,"computedAt":null}}`
	adminKey = `{"id":"k_1","tenant":"acme","name":"","scope":"read","queues":["orders*","billing"],"createdAt":"2026-01-02T03:04:05Z",` +
		`"expiresAt":"2026-02-03T04:05:06.5+02:00","revokedAt":null,"lastUsedAt":null`
	adminUsage = `{"requests":10,"pushRequests":2,"messagesIn":3,"duplicatesIn":0,"failedIn":0,"bytesIn":400,"bytesOut":500,` +
		`"popRequests":1,"emptyPops":0,"messagesOut":6,"acks":7,"rejectedRate":1,"rejectedQuota":2,"upstreamErrors":0,` +
		`"storedMessages":0,"storedBytes":0,"queues":0}`
)

// adminMove is a move of the tenant acme from default to c2 as the admin API answers it.
func adminMove(id int, phase, pauseMs, finishedAt string) string {
	return fmt.Sprintf(`{"id":%d,"tenant":"acme","from":"default","to":"c2","phase":%q,"progress":{},"error":null,`+
		`"cancelRequested":false,"pauseMs":%s,"createdAt":"2026-01-02T03:04:05Z","updatedAt":"2026-01-02T03:04:05Z","finishedAt":%s}`,
		id, phase, pauseMs, finishedAt)
}

// adminStub is an admin API answering each "METHOD path" with a canned body, and
// recording the bodies it was sent.
type adminStub struct {
	url  string
	mu   sync.Mutex
	sent map[string]string
}

func newAdminStub(t *testing.T) *adminStub {
	t.Helper()
	answers := map[string]string{
		"GET /admin/v1/tenants":              `{"tenants":[` + adminTenant + `],"total":1}`,
		"GET /admin/v1/tenants/acme":         adminTenant,
		"POST /admin/v1/tenants":             adminTenant,
		"PATCH /admin/v1/tenants/acme":       adminTenant,
		"DELETE /admin/v1/tenants/acme":      `{"deleted":true,"keysRevoked":12}`,
		"POST /admin/v1/tenants/acme/purge":  `{"queuesDeleted":3}`,
		"GET /admin/v1/tenants/acme/keys":    `{"keys":[` + adminKey + `},{"id":"k_0","tenant":"acme","name":"old","scope":"admin","queues":null,"createdAt":"2026-01-01T00:00:00Z","expiresAt":null,"revokedAt":"2026-01-01T01:00:00Z","lastUsedAt":null}]}`,
		"POST /admin/v1/tenants/acme/keys":   adminKey + `,"key":"qk_secret"}`,
		"POST /admin/v1/keys/k_1/rotate":     adminKey + `,"key":"qk_next"}`,
		"DELETE /admin/v1/keys/k_1":          adminKey + `}`,
		"GET /admin/v1/users":                `{"users":[{"username":"ann","role":"read-write","tenant":"acme","createdAt":"2026-01-02T03:04:05Z","updatedAt":"2026-01-02T03:04:05Z"},{"username":"op","role":"admin","tenant":null,"createdAt":"2026-01-02T03:04:05Z","updatedAt":"2026-01-02T03:04:05Z"}]}`,
		"POST /admin/v1/users":               `{"username":"ann","role":"read-write","tenant":"acme","createdAt":"2026-01-02T03:04:05Z","updatedAt":"2026-01-02T03:04:05Z"}`,
		"POST /admin/v1/users/op/password":   `{"username":"op","role":"admin","tenant":null,"createdAt":"2026-01-02T03:04:05Z","updatedAt":"2026-01-02T03:04:05Z"}`,
		"DELETE /admin/v1/users/op":          `{"deleted":true}`,
		"GET /admin/v1/tenants/acme/usage":   `{"tenant":"acme","granularity":"hour","from":"2026-01-01T00:00:00Z","to":"2026-01-01T03:00:00Z","series":[{"start":"2026-01-01T01:00:00Z",` + adminUsage[1:] + `],"totals":` + adminUsage + `}`,
		"GET /admin/v1/usage":                `{"granularity":"hour","from":"2026-01-01T00:00:00Z","to":"2026-01-01T03:00:00Z","tenants":[{"tenant":"acme","totals":` + adminUsage + `},{"tenant":"bob","totals":` + adminUsage + `}]}`,
		"GET /admin/v1/tenants/nobody/usage": `{"code":"not_found","error":"not found"}`,
		"POST /admin/v1/tenants/acme/move":   adminMove(7, "copying", "null", "null"),
		"GET /admin/v1/moves/7":              adminMove(7, "done", "12.5", `"2026-01-02T03:05:00Z"`),
		"POST /admin/v1/tenants/bob/move":    adminMove(8, "copying", "null", "null"),
		"GET /admin/v1/moves/8":              strings.Replace(adminMove(8, "failed", "null", `"2026-01-02T03:05:00Z"`), `"error":null`, `"error":"no broker of cell c2 is up"`, 1),
	}
	s := &adminStub{sent: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := r.Method + " " + r.URL.Path
		s.mu.Lock()
		s.sent[key] = string(body)
		s.mu.Unlock()
		ans, ok := answers[key]
		w.Header().Set("Content-Type", "application/json")
		switch {
		case !ok || strings.Contains(key, "nobody"):
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"code":"not_found","error":"not found"}`)
		case r.Method == http.MethodPost && !strings.HasSuffix(key, "/purge") && !strings.HasSuffix(key, "/password"):
			w.WriteHeader(http.StatusCreated)
		}
		_, _ = io.WriteString(w, ans)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// body decodes the body last sent to key into v.
func (s *adminStub) body(t *testing.T, key string, v any) {
	t.Helper()
	s.mu.Lock()
	raw := s.sent[key]
	s.mu.Unlock()
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(v), "%s sent %q", key, raw)
}

func (s *adminStub) run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := []string{"QUEEN_PROXY_ADMIN_URL=" + s.url, "QUEEN_PROXY_ADMIN_TOKEN=t0k", "HOME=" + t.TempDir()}
	code := cli.Main(context.Background(), append([]string{"proxy"}, args...), env, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// queenctl proxy's tables, byte for byte, and the bodies it sends.
func TestProxyCommands(t *testing.T) {
	t.Parallel()
	s := newAdminStub(t)
	const tenantRow = "ID    NAME  STATUS  CELL     REQ/S  MSG/S  CONCURRENT  MAX MESSAGES  MAX QUEUES\n" +
		"acme  Acme  active  default  12.5   1000   5           1000000       7\n"
	const k1 = "k_1  acme    -     read   orders*,billing  expires 2026-02-03T04:05:06.5+02:00\n"
	const keyHeader = "ID   TENANT  NAME  SCOPE  QUEUES           STATE\n"
	const usageHeader = "TENANT  START                 REQUESTS  MESSAGES IN  MESSAGES OUT  ACKS  BYTES IN  BYTES OUT  REJECTED\n"
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"TenantList", []string{"tenant", "list"}, "", tenantRow},
		{"TenantGet", []string{"tenant", "get", "acme"}, "", tenantRow},
		{"TenantCreate", []string{"tenant", "create", "acme", "--name", "Acme", "--quotas", `{"maxQueues":7}`}, "", tenantRow},
		{"TenantUpdate", []string{"tenant", "update", "acme", "--limits", "null"}, "", tenantRow},
		{"TenantDelete", []string{"tenant", "delete", "acme"}, "", "deleted:     true\nkeysRevoked: 12\n"},
		{"TenantPurge", []string{"tenant", "purge", "acme"}, "", "queuesDeleted: 3\n"},
		{"KeyList", []string{"key", "list", "acme"}, "", keyHeader + k1 + "k_0  acme    old   admin                   revoked\n"},
		{"KeyCreate", []string{"key", "create", "acme", "--scope", "read", "--queues", "orders*,billing", "--expires", "2026-02-03T04:05:06.5+02:00"},
			"", keyHeader + k1 + "\nKey (shown once, store it now):\nqk_secret\n"},
		{"KeyRotate", []string{"key", "rotate", "k_1", "--grace", "90s"}, "", keyHeader + k1 + "\nKey (shown once, store it now):\nqk_next\n"},
		{"KeyRevoke", []string{"key", "revoke", "k_1"}, "", keyHeader + k1},
		{"UserList", []string{"user", "list"}, "", "USERNAME  ROLE        TENANT\nann       read-write  acme\nop        admin       (operator)\n"},
		{"UserCreate", []string{"user", "create", "ann", "--role", "read-write", "--tenant", "acme"}, "pw-123456\n",
			"USERNAME  ROLE        TENANT\nann       read-write  acme\n"},
		{"UserPasswd", []string{"user", "passwd", "op"}, "pw-abcdefg\n", "USERNAME  ROLE   TENANT\nop        admin  (operator)\n"},
		{"UserDelete", []string{"user", "delete", "op"}, "", "deleted: true\n"},
		{"UsageTenant", []string{"usage", "--tenant", "acme"}, "", usageHeader +
			"acme    2026-01-01T01:00:00Z  10        3            6             7     400       500        3\n" +
			"acme    total                 10        3            6             7     400       500        3\n"},
		{"UsageAll", []string{"usage"}, "", "TENANT  START  REQUESTS  MESSAGES IN  MESSAGES OUT  ACKS  BYTES IN  BYTES OUT  REJECTED\n" +
			"acme    total  10        3            6             7     400       500        3\n" +
			"bob     total  10        3            6             7     400       500        3\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := s.run(t, tc.stdin, tc.args...)
			require.Equal(t, cli.ExitOK, code, errOut)
			require.Equal(t, tc.want, out)
		})
	}

	t.Run("Bodies", func(t *testing.T) {
		var tc api.ProxyTenantCreate
		s.body(t, "POST /admin/v1/tenants", &tc)
		require.Equal(t, "acme", tc.ID)
		require.Equal(t, "Acme", tc.Name)
		require.JSONEq(t, `{"maxQueues":7}`, string(tc.Quotas))
		require.True(t, tc.Limits == nil || string(tc.Limits) == "null", "limits %s", tc.Limits)

		var ch api.ProxyTenantChange
		s.body(t, "PATCH /admin/v1/tenants/acme", &ch)
		require.Nil(t, ch.Name)
		require.Equal(t, "null", string(ch.Limits), "a JSON null resets the limits")

		var kc api.ProxyKeyCreate
		s.body(t, "POST /admin/v1/tenants/acme/keys", &kc)
		require.Equal(t, "read", kc.Scope)
		require.Equal(t, []string{"orders*", "billing"}, kc.Queues)
		require.NotNil(t, kc.ExpiresAt)
		require.True(t, kc.ExpiresAt.Equal(time.Date(2026, 2, 3, 2, 5, 6, 5e8, time.UTC)), "%s", kc.ExpiresAt)

		var kr api.ProxyKeyRotate
		s.body(t, "POST /admin/v1/keys/k_1/rotate", &kr)
		require.NotNil(t, kr.GraceSeconds)
		require.Equal(t, int64(90), *kr.GraceSeconds)

		var uc api.ProxyUserCreate
		s.body(t, "POST /admin/v1/users", &uc)
		require.Equal(t, api.ProxyUserCreate{Username: "ann", Password: "pw-123456", Role: "read-write", Tenant: ptr("acme")}, uc)

		var pw api.ProxyPassword
		s.body(t, "POST /admin/v1/users/op/password", &pw)
		require.Equal(t, "pw-abcdefg", pw.Password)
	})

	t.Run("Suspend", func(t *testing.T) {
		code, _, errOut := s.run(t, "", "tenant", "suspend", "acme")
		require.Equal(t, cli.ExitOK, code, errOut)
		var ch api.ProxyTenantChange
		s.body(t, "PATCH /admin/v1/tenants/acme", &ch)
		require.NotNil(t, ch.Status)
		require.Equal(t, "suspended", *ch.Status)
	})

	t.Run("BadExpiry", func(t *testing.T) {
		code, out, errOut := s.run(t, "", "key", "create", "acme", "--scope", "read", "--expires", "tomorrow")
		require.Equal(t, cli.ExitUsage, code, errOut)
		require.Empty(t, out)
		require.Contains(t, errOut, `--expires "tomorrow" is not an RFC 3339 time`)
	})

	t.Run("JSONIsTheAnswer", func(t *testing.T) {
		code, out, errOut := s.run(t, "", "tenant", "purge", "acme", "-o", "json")
		require.Equal(t, cli.ExitOK, code, errOut)
		require.JSONEq(t, `{"queuesDeleted":3}`, out)
	})
}

func ptr[T any](v T) *T { return &v }
