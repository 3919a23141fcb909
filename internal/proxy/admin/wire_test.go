package admin_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// TestMain runs the tests through proxytest.Main, as every package running proxies does.
func TestMain(m *testing.M) { os.Exit(proxytest.Main(m)) }

// adminBundle is a real proxy in front of a real broker, for the admin API's bytes.
type adminBundle struct {
	broker *daemontest.Server
	proxy  *proxytest.Proxy
	// swaps are the run's own values (key ids and texts, replica ids) and the
	// placeholders normalize puts in their place.
	swaps []string
}

func setup(t *testing.T) *adminBundle {
	t.Helper()
	b := &adminBundle{}
	b.broker = proxytest.StartBroker(t, daemontest.Options{})
	b.proxy = proxytest.Start(t, proxytest.Options{Backends: []string{b.broker.URL}})
	b.proxy.WaitBackends(t, "up", 10*time.Second)
	b.swaps = []string{b.broker.URL, "<broker>"}
	return b
}

var (
	timestamp  = regexp.MustCompile(`"\d{4}-\d\d-\d\dT[0-9:.]+(Z|[+-]\d\d:\d\d)"`)
	computedAt = regexp.MustCompile(`"computedAt":(null|"<time>")`)
)

// call sends body (raw JSON, "" for none) with the admin token and returns the
// status and the answer, its timestamps, snapshot time and the run's own ids
// replaced by placeholders.
func (b *adminBundle) call(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, b.proxy.AdminURL+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+proxytest.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"), "%s %s", method, path)
	return resp.StatusCode, b.normalize(string(raw))
}

func (b *adminBundle) normalize(s string) string {
	s = strings.NewReplacer(b.swaps...).Replace(s)
	s = timestamp.ReplaceAllString(s, `"<time>"`)
	return computedAt.ReplaceAllString(s, `"computedAt":"<time?>"`)
}

// swap makes normalize replace the value of field in the JSON object raw by ph.
func (b *adminBundle) swap(t *testing.T, raw, field, ph string) {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &v))
	s, ok := v[field].(string)
	require.True(t, ok, "no %s in %s", field, raw)
	b.swaps = append(b.swaps, s, ph)
}

// want checks one call's status and exact bytes.
func (b *adminBundle) want(t *testing.T, method, path, body string, status int, want string) string {
	t.Helper()
	got, raw := b.call(t, method, path, body)
	require.Equal(t, status, got, "%s %s: %s", method, path, raw)
	require.Equal(t, want+"\n", raw, "%s %s", method, path)
	return raw
}

// The admin API's answers, byte for byte, per family of endpoints: field names,
// their order, nulls, empty lists and omitted fields are what scripts read.
func TestAnswerBytes(t *testing.T) {
	t.Parallel()
	b := setup(t)

	const limits = `"limits":{"requestsPerSecond":100,"requestsBurst":200,"messagesPerSecond":1000,"messagesBurst":5000,` +
		`"maxConcurrent":5,"maxRequestBytes":16777216}`
	const quotas = `"quotas":{"maxMessages":1000000,"maxBytes":1073741824,"maxQueues":7}`
	const usage = `"usage":{"messages":0,"bytes":0,"queues":0,"computedAt":"<time?>"}`
	const acme = `{"id":"acme","name":"Acme","status":"active","cell":"default","createdAt":"<time>","updatedAt":"<time>",` +
		limits + "," + quotas + "," + usage + "}"

	t.Run("Tenants", func(t *testing.T) {
		b.want(t, http.MethodPost, "/admin/v1/tenants", `{"id":"acme","name":"Acme","limits":{"maxConcurrent":5},"quotas":{"maxQueues":7}}`,
			http.StatusCreated, acme)
		b.want(t, http.MethodGet, "/admin/v1/tenants/acme", "", http.StatusOK, acme)
		b.want(t, http.MethodGet, "/admin/v1/tenants", "", http.StatusOK, `{"tenants":[`+acme+`],"total":1}`)
		b.want(t, http.MethodGet, "/admin/v1/tenants?status=suspended", "", http.StatusOK, `{"tenants":[],"total":0}`)
		b.want(t, http.MethodPatch, "/admin/v1/tenants/acme", `{"name":"Acme 2","status":"suspended"}`, http.StatusOK,
			strings.Replace(strings.Replace(acme, `"Acme"`, `"Acme 2"`, 1), `"active"`, `"suspended"`, 1))
		b.want(t, http.MethodPatch, "/admin/v1/tenants/acme", `{"name":"Acme","status":"active"}`, http.StatusOK, acme)
		b.want(t, http.MethodPost, "/admin/v1/tenants", `{"id":"acme","nope":1}`, http.StatusBadRequest,
			`{"code":"invalid_argument","error":"nope: unknown field","field":"nope"}`)
	})

	t.Run("Keys", func(t *testing.T) {
		b.want(t, http.MethodGet, "/admin/v1/tenants/acme/keys", "", http.StatusOK, `{"keys":[]}`)
		_, raw := b.call(t, http.MethodPost, "/admin/v1/tenants/acme/keys", `{"name":"k1","scope":"write","queues":["orders*"]}`)
		b.swap(t, raw, "id", "<k1>")
		b.swap(t, raw, "key", "<k1 text>")
		const k1 = `{"id":"<k1>","tenant":"acme","name":"k1","scope":"write","queues":["orders*"],"createdAt":"<time>",` +
			`"expiresAt":null,"revokedAt":null,"lastUsedAt":null`
		require.Equal(t, k1+`,"key":"<k1 text>"}`+"\n", b.normalize(raw))

		_, raw = b.call(t, http.MethodPost, "/admin/v1/tenants/acme/keys", `{"scope":"read","expiresAt":"2999-01-02T03:04:05Z"}`)
		b.swap(t, raw, "id", "<k2>")
		b.swap(t, raw, "key", "<k2 text>")
		const k2 = `{"id":"<k2>","tenant":"acme","name":"","scope":"read","queues":["*"],"createdAt":"<time>",` +
			`"expiresAt":"<time>","revokedAt":null,"lastUsedAt":null`
		require.Equal(t, k2+`,"key":"<k2 text>"}`+"\n", b.normalize(raw))
		b.want(t, http.MethodGet, "/admin/v1/tenants/acme/keys", "", http.StatusOK, `{"keys":[`+k2+"},"+k1+"}]}")

		_, raw = b.call(t, http.MethodPost, "/admin/v1/keys/"+b.raw("<k1>")+"/rotate", `{"graceSeconds":60}`)
		b.swap(t, raw, "id", "<k3>")
		b.swap(t, raw, "key", "<k3 text>")
		require.Equal(t, `{"id":"<k3>","tenant":"acme","name":"k1","scope":"write","queues":["orders*"],"createdAt":"<time>",`+
			`"expiresAt":null,"revokedAt":null,"lastUsedAt":null,"key":"<k3 text>"}`+"\n", b.normalize(raw))
		b.want(t, http.MethodDelete, "/admin/v1/keys/"+b.raw("<k2>"), "", http.StatusOK,
			`{"id":"<k2>","tenant":"acme","name":"","scope":"read","queues":["*"],"createdAt":"<time>",`+
				`"expiresAt":"<time>","revokedAt":"<time>","lastUsedAt":null}`)
	})

	t.Run("Users", func(t *testing.T) {
		const ann = `{"username":"ann","role":"read-write","tenant":"acme","createdAt":"<time>","updatedAt":"<time>"}`
		const op = `{"username":"op","role":"admin","tenant":null,"createdAt":"<time>","updatedAt":"<time>"}`
		b.want(t, http.MethodPost, "/admin/v1/users", `{"username":"ann","password":"secret-pw-1","role":"read-write","tenant":"acme"}`,
			http.StatusCreated, ann)
		b.want(t, http.MethodPost, "/admin/v1/users", `{"username":"op","password":"secret-pw-2","role":"admin"}`,
			http.StatusCreated, op)
		b.want(t, http.MethodGet, "/admin/v1/users/ann", "", http.StatusOK, ann)
		b.want(t, http.MethodGet, "/admin/v1/users?tenant=acme", "", http.StatusOK, `{"users":[`+ann+`]}`)
		b.want(t, http.MethodGet, "/admin/v1/users?tenant=nobody", "", http.StatusOK, `{"users":[]}`)
		b.want(t, http.MethodPost, "/admin/v1/users/op/password", `{"password":"secret-pw-3"}`, http.StatusOK, op)
		b.want(t, http.MethodDelete, "/admin/v1/users/op", "", http.StatusOK, `{"deleted":true}`)
	})

	t.Run("Usage", func(t *testing.T) {
		const span = `?from=2026-01-01T00:00:00Z&to=2026-01-01T03:00:00Z&granularity=hour`
		b.want(t, http.MethodGet, "/admin/v1/tenants/acme/usage"+span, "", http.StatusOK,
			`{"tenant":"acme","granularity":"hour","from":"<time>","to":"<time>","series":[],"totals":{"requests":0,"pushRequests":0,`+
				`"messagesIn":0,"duplicatesIn":0,"failedIn":0,"bytesIn":0,"bytesOut":0,"popRequests":0,"emptyPops":0,"messagesOut":0,`+
				`"acks":0,"rejectedRate":0,"rejectedQuota":0,"upstreamErrors":0,"storedMessages":0,"storedBytes":0,"queues":0}}`)
		b.want(t, http.MethodGet, "/admin/v1/usage"+span, "", http.StatusOK,
			`{"granularity":"hour","from":"<time>","to":"<time>","tenants":[]}`)
	})

	t.Run("Cluster", func(t *testing.T) {
		b.want(t, http.MethodGet, "/admin/v1/upstreams", "", http.StatusOK, `{"upstreams":[{"state":"up","url":"<broker>","cell":"default"}]}`)
		_, raw := b.call(t, http.MethodGet, "/admin/v1/replicas", "")
		var rs struct {
			Replicas []map[string]any `json:"replicas"`
		}
		require.NoError(t, json.Unmarshal([]byte(raw), &rs))
		require.Len(t, rs.Replicas, 1, raw)
		rep, err := json.Marshal(rs.Replicas[0])
		require.NoError(t, err)
		b.swap(t, string(rep), "id", "<replica>")
		b.swap(t, string(rep), "instance", "<instance>")
		require.Equal(t, `{"replicas":[{"id":"<replica>","instance":"<instance>","startedAt":"<time>","heartbeatAt":"<time>"}]}`+"\n",
			b.normalize(raw))
		b.want(t, http.MethodGet, "/health", "", http.StatusOK, `{"status":"ok"}`)
		b.want(t, http.MethodGet, "/health/live", "", http.StatusOK, `{"status":"ok"}`)
	})

	t.Run("Lifecycle", func(t *testing.T) {
		b.want(t, http.MethodPost, "/admin/v1/tenants/acme/purge", "", http.StatusConflict,
			`{"code":"conflict","error":"suspend or delete the tenant before purging it"}`)
		b.want(t, http.MethodDelete, "/admin/v1/tenants/acme", "", http.StatusOK, `{"deleted":true,"keysRevoked":2}`)
		b.want(t, http.MethodPost, "/admin/v1/tenants/acme/purge", "", http.StatusOK, `{"queuesDeleted":0}`)
	})
}

// raw is the run's own value normalize replaces by ph.
func (b *adminBundle) raw(ph string) string {
	for i := 1; i < len(b.swaps); i += 2 {
		if b.swaps[i] == ph {
			return b.swaps[i-1]
		}
	}
	return ph
}
