package admin_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// A body value of the wrong type is a 400 naming its JSON path as the field and the
// JSON type expected, never a Go type: at the top of a body, inside limits and
// quotas, and for a key's expiry.
func TestBodyTypeErrorsNameTheJSONPath(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := acmeWithKey(t, b, `{"id":"acme"}`)

	for _, tc := range []struct{ method, path, body, want string }{
		{http.MethodPost, "/admin/v1/keys/" + key + "/rotate", `{"graceSeconds":"10"}`,
			`{"code":"invalid_argument","error":"graceSeconds: must be an integer, not string","field":"graceSeconds"}`},
		{http.MethodPost, "/admin/v1/keys/" + key + "/rotate", `{"graceSeconds":1.5}`,
			`{"code":"invalid_argument","error":"graceSeconds: must be an integer, not number 1.5","field":"graceSeconds"}`},
		{http.MethodPost, "/admin/v1/tenants", `[]`,
			`{"code":"invalid_argument","error":"body: must be an object, not array","field":"body"}`},
		{http.MethodPost, "/admin/v1/tenants", `{"id":"bob","limits":{"requestsPerSecond":"50"}}`,
			`{"code":"invalid_argument","error":"limits.requestsPerSecond: must be a number, not string","field":"limits.requestsPerSecond"}`},
		{http.MethodPatch, "/admin/v1/tenants/acme", `{"quotas":{"maxQueues":true}}`,
			`{"code":"invalid_argument","error":"quotas.maxQueues: must be an integer, not bool","field":"quotas.maxQueues"}`},
		{http.MethodPatch, "/admin/v1/tenants/acme", `{"limits":7}`,
			`{"code":"invalid_argument","error":"limits: must be an object, not number","field":"limits"}`},
		{http.MethodPatch, "/admin/v1/tenants/acme", `{"name":7}`,
			`{"code":"invalid_argument","error":"name: must be a string, not number","field":"name"}`},
		{http.MethodPost, "/admin/v1/tenants/acme/keys", `{"scope":"read","queues":"orders"}`,
			`{"code":"invalid_argument","error":"queues: must be an array, not string","field":"queues"}`},
		{http.MethodPost, "/admin/v1/tenants/acme/keys", `{"scope":"read","expiresAt":5}`,
			`{"code":"invalid_argument","error":"expiresAt: must be an RFC 3339 time string (2027-01-01T00:00:00Z)","field":"expiresAt"}`},
		{http.MethodPost, "/admin/v1/tenants", `{"id":"cc","bogus":1}`,
			`{"code":"invalid_argument","error":"bogus: unknown field","field":"bogus"}`},
		{http.MethodPost, "/admin/v1/tenants/acme/keys", `{"scope":"read","expiresAt":"tomorrow"}`,
			`{"code":"invalid_argument","error":"expiresAt: must be an RFC 3339 time string (2027-01-01T00:00:00Z)","field":"expiresAt"}`},
	} {
		got := b.want(t, tc.method, tc.path, tc.body, http.StatusBadRequest, tc.want)
		require.NotContains(t, got, "Go ", "%s %s", tc.method, tc.body)
	}
}

// PATCH of a tenant: a null inside limits or quotas resets that one field to its
// default and keeps the others; an empty name is the id, as at creation.
func TestTenantPatchNullsAndEmptyName(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, _ := b.call(t, http.MethodPost, "/admin/v1/tenants",
		`{"id":"acme","name":"Acme","limits":{"requestsPerSecond":5,"requestsBurst":7},"quotas":{"maxQueues":3,"maxBytes":9}}`)
	require.Equal(t, http.StatusCreated, code)

	code, raw := b.call(t, http.MethodPatch, "/admin/v1/tenants/acme",
		`{"limits":{"requestsPerSecond":null},"quotas":{"MaxQueues":null}}`)
	require.Equal(t, http.StatusOK, code, raw)
	require.Contains(t, raw, `"requestsPerSecond":100,"requestsBurst":7,`, "one limit reset to its default")
	require.Contains(t, raw, `"maxBytes":9,"maxQueues":100}`, "one quota reset to its default")

	code, raw = b.call(t, http.MethodPatch, "/admin/v1/tenants/acme", `{"name":""}`)
	require.Equal(t, http.StatusOK, code, raw)
	require.True(t, strings.HasPrefix(raw, `{"id":"acme","name":"acme",`), raw)
}

// A key's allowlist: left out or null it admits every queue; an empty list is
// refused rather than read as every queue (a key widened past its creator's intent),
// and nothing is created.
func TestKeyAllowlistEmptyIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, raw := b.call(t, http.MethodPost, "/admin/v1/tenants", `{"id":"acme"}`)
	require.Equal(t, http.StatusCreated, code, raw)
	b.want(t, http.MethodPost, "/admin/v1/tenants/acme/keys", `{"name":"k","scope":"read","queues":[]}`, http.StatusBadRequest,
		`{"code":"invalid_argument","error":"queues: name at least one queue or prefix; leave queues out for every queue","field":"queues"}`)
	code, raw = b.call(t, http.MethodGet, "/admin/v1/tenants/acme/keys", "")
	require.Equal(t, http.StatusOK, code, raw)
	require.JSONEq(t, `{"keys":[]}`, raw, "the refused key was not created")
	for _, body := range []string{`{"name":"all","scope":"read"}`, `{"name":"all","scope":"read","queues":null}`} {
		code, raw = b.call(t, http.MethodPost, "/admin/v1/tenants/acme/keys", body)
		require.Equal(t, http.StatusCreated, code, raw)
		require.Contains(t, raw, `"queues":["*"]`, body)
	}
}

// A deleted tenant is still shown (a tombstone): adding a key or a user to it is a
// conflict, like changing it, not a tenant that is not there; an id never used is.
func TestDeletedTenantRefusesAdditionsAsConflicts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, raw := b.call(t, http.MethodPost, "/admin/v1/tenants", `{"id":"gone"}`)
	require.Equal(t, http.StatusCreated, code, raw)
	code, raw = b.call(t, http.MethodDelete, "/admin/v1/tenants/gone", "")
	require.Equal(t, http.StatusOK, code, raw)
	code, raw = b.call(t, http.MethodGet, "/admin/v1/tenants/gone", "")
	require.Equal(t, http.StatusOK, code, raw)
	require.Contains(t, raw, `"status":"deleted"`)

	const deleted = `{"code":"conflict","error":"conflict: the tenant is deleted"}`
	b.want(t, http.MethodPost, "/admin/v1/tenants/gone/keys", `{"name":"k","scope":"read"}`, http.StatusConflict, deleted)
	b.want(t, http.MethodPost, "/admin/v1/users", `{"username":"u1","password":"password-123","role":"read-only","tenant":"gone"}`,
		http.StatusConflict, deleted)
	b.want(t, http.MethodPatch, "/admin/v1/tenants/gone", `{"name":"back"}`, http.StatusConflict, deleted)
	b.want(t, http.MethodPost, "/admin/v1/tenants", `{"id":"gone"}`, http.StatusConflict,
		`{"code":"already_exists","error":"already exists (tenant ids are never reused)"}`)
	b.want(t, http.MethodPost, "/admin/v1/tenants/never/keys", `{"name":"k","scope":"read"}`, http.StatusNotFound,
		`{"code":"not_found","error":"not found"}`)
}

// A known path asked with another method is a JSON 405 naming the methods it takes,
// in its Allow header too.
func TestMethodNotAllowedIsJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.want(t, http.MethodPut, "/admin/v1/tenants/acme", `{}`, http.StatusMethodNotAllowed,
		`{"code":"method_not_allowed","error":"PUT is not allowed here; allowed: GET, PATCH, DELETE"}`)
	b.want(t, http.MethodGet, "/admin/v1/keys/k1", "", http.StatusMethodNotAllowed,
		`{"code":"method_not_allowed","error":"GET is not allowed here; allowed: DELETE"}`)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, b.proxy.AdminURL+"/admin/v1/tenants/acme", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+proxytest.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, "GET, PATCH, DELETE", resp.Header.Get("Allow"))
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
}

// Text the proxy's database cannot take — a NUL in a body string, a NUL or invalid
// UTF-8 in the path or the query — is a 400 naming where it is, never a 500 from the
// database; so is data after a body's JSON value, and a body over 1 MiB is a 413.
func TestUnstorableTextAndTrailingDataAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, raw := b.call(t, http.MethodPost, "/admin/v1/tenants", `{"id":"acme"}`)
	require.Equal(t, http.StatusCreated, code, raw)

	for _, tc := range []struct{ method, path, body, want string }{
		{http.MethodPost, "/admin/v1/tenants", `{"id":"x1","name":"a\u0000b"}`,
			`{"code":"invalid_argument","error":"name: must not contain NUL (\\u0000)","field":"name"}`},
		{http.MethodPatch, "/admin/v1/tenants/acme", `{"limits":{"requestsPerSecond":1},"name":"\u0000"}`,
			`{"code":"invalid_argument","error":"name: must not contain NUL (\\u0000)","field":"name"}`},
		{http.MethodPost, "/admin/v1/tenants/acme/keys", `{"scope":"read","queues":["ok","q\u0000"]}`,
			`{"code":"invalid_argument","error":"queues[1]: must not contain NUL (\\u0000)","field":"queues[1]"}`},
		{http.MethodPost, "/admin/v1/tenants/acme/move", `{"cell":"a\u0000b"}`,
			`{"code":"invalid_argument","error":"cell: must not contain NUL (\\u0000)","field":"cell"}`},
		{http.MethodGet, "/admin/v1/tenants/%00", ``,
			`{"code":"invalid_argument","error":"path: must be UTF-8 without NUL","field":"path"}`},
		{http.MethodDelete, "/admin/v1/cells/alpha%FF", ``,
			`{"code":"invalid_argument","error":"path: must be UTF-8 without NUL","field":"path"}`},
		{http.MethodGet, "/admin/v1/moves?tenant=%00", ``,
			`{"code":"invalid_argument","error":"tenant: must be UTF-8 without NUL","field":"tenant"}`},
		{http.MethodGet, "/admin/v1/users?tenant=%FF", ``,
			`{"code":"invalid_argument","error":"tenant: must be UTF-8 without NUL","field":"tenant"}`},
		{http.MethodPost, "/admin/v1/tenants", `{"id":"t1"}x`,
			`{"code":"invalid_argument","error":"invalid JSON body: more data after the JSON value"}`},
		{http.MethodPatch, "/admin/v1/tenants/acme", `{"name":"n"}{"name":"m"}`,
			`{"code":"invalid_argument","error":"invalid JSON body: more data after the JSON value"}`},
	} {
		b.want(t, tc.method, tc.path, tc.body, http.StatusBadRequest, tc.want)
	}
	code, raw = b.call(t, http.MethodPost, "/admin/v1/tenants", `{"id":"big","name":"`+strings.Repeat("x", 1<<20)+`"}`)
	require.Equal(t, http.StatusRequestEntityTooLarge, code, raw)
	require.Contains(t, raw, `"code":"payload_too_large"`)
	// Nothing was stored by any of them.
	code, raw = b.call(t, http.MethodGet, "/admin/v1/tenants", ``)
	require.Equal(t, http.StatusOK, code, raw)
	require.NotContains(t, raw, `"x1"`)
	require.NotContains(t, raw, `"t1"`)
	require.NotContains(t, raw, `"big"`)
}

// Values that used to be stored as sent: a tenant's or a key's name is at most 255
// characters without control characters; a cell's upstream port is 1–65535; a grace
// period far below zero is out of range, not an overflow into it. A refused member of
// limits or quotas is named by its path, not by its parent.
func TestNamesPortsAndGraceAreBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := acmeWithKey(t, b, `{"id":"acme","name":"`+strings.Repeat("é", 255)+`"}`)

	for _, tc := range []struct{ method, path, body, want string }{
		{http.MethodPost, "/admin/v1/tenants", `{"id":"long","name":"` + strings.Repeat("x", 256) + `"}`,
			`{"code":"invalid_argument","error":"name: must be at most 255 characters","field":"name"}`},
		{http.MethodPatch, "/admin/v1/tenants/acme", `{"name":"two\nlines"}`,
			`{"code":"invalid_argument","error":"name: must not contain control characters","field":"name"}`},
		{http.MethodPost, "/admin/v1/tenants/acme/keys", `{"name":"` + strings.Repeat("k", 256) + `","scope":"read"}`,
			`{"code":"invalid_argument","error":"name: must be at most 255 characters","field":"name"}`},
		{http.MethodPost, "/admin/v1/cells", `{"name":"c1","upstreams":["http://127.0.0.1:99999"]}`,
			`{"code":"invalid_argument","error":"upstreams: must have a port from 1 to 65535, or none: \"http://127.0.0.1:99999\"","field":"upstreams"}`},
		{http.MethodPost, "/admin/v1/cells", `{"name":"c2","upstreams":["http://127.0.0.1:0"]}`,
			`{"code":"invalid_argument","error":"upstreams: must have a port from 1 to 65535, or none: \"http://127.0.0.1:0\"","field":"upstreams"}`},
		{http.MethodPost, "/admin/v1/keys/" + key + "/rotate", `{"graceSeconds":-9223372036854775808}`,
			`{"code":"invalid_argument","error":"graceSeconds: must be 0..604800","field":"graceSeconds"}`},
		{http.MethodPost, "/admin/v1/keys/" + key + "/rotate", `{"graceSeconds":9223372036854775807}`,
			`{"code":"invalid_argument","error":"graceSeconds: must be 0..604800","field":"graceSeconds"}`},
		// A nested member is named by its path.
		{http.MethodPatch, "/admin/v1/tenants/acme", `{"limits":{"requestsPerSecond":-1}}`,
			`{"code":"invalid_argument","error":"limits.requestsPerSecond: must be 0 or more (0 = unlimited)","field":"limits.requestsPerSecond"}`},
		{http.MethodPost, "/admin/v1/tenants", `{"id":"neg","quotas":{"maxQueues":-5}}`,
			`{"code":"invalid_argument","error":"quotas.maxQueues: must be 0 or more (0 = unlimited)","field":"quotas.maxQueues"}`},
		{http.MethodPatch, "/admin/v1/tenants/acme", `{"limits":{"bogus":1}}`,
			`{"code":"invalid_argument","error":"limits.bogus: unknown field","field":"limits.bogus"}`},
	} {
		b.want(t, tc.method, tc.path, tc.body, http.StatusBadRequest, tc.want)
	}
}

// Two Authorization headers are refused (401) whatever they hold, the admin token
// first or second: which one counts would be a guess.
func TestTwoAuthorizationHeadersAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, pair := range [][2]string{{proxytest.AdminToken, "other"}, {"other", proxytest.AdminToken}} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.proxy.AdminURL+"/admin/v1/tenants", nil)
		require.NoError(t, err)
		req.Header.Add("Authorization", "Bearer "+pair[0])
		req.Header.Add("Authorization", "Bearer "+pair[1])
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
	code, raw := b.call(t, http.MethodGet, "/admin/v1/tenants", "")
	require.Equal(t, http.StatusOK, code, raw)
}

// acmeWithKey creates tenant acme from tenantBody and a read key in it, and returns the
// key's id.
func acmeWithKey(t *testing.T, b *adminBundle, tenantBody string) string {
	t.Helper()
	code, raw := b.call(t, http.MethodPost, "/admin/v1/tenants", tenantBody)
	require.Equal(t, http.StatusCreated, code, raw)
	code, raw = b.call(t, http.MethodPost, "/admin/v1/tenants/acme/keys", `{"name":"k","scope":"read"}`)
	require.Equal(t, http.StatusCreated, code, raw)
	b.swap(t, raw, "id", "<k>")
	return b.raw("<k>")
}
