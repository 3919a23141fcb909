package daemon_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// The session cookie works as an API credential only on requests that say they come
// from the proxy's own pages (Sec-Fetch-Site same-origin or none, or an Origin of
// this host); one that says nothing is refused, as a browser sends the cookie along
// with whatever another site makes it request. The same token as a bearer needs no
// such header, and GET /api/me (which changes nothing) takes the cookie without one.
func TestCookieCredentialsNeedOurPages(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{login: true})
	createTenant(t, b.proxy, tenantSpec{ID: "acme"})
	createUser(t, b.proxy, "alice", "alice-password", "read-write", "acme")
	alice := login(t, b.proxy, "alice", "alice-password")
	u, err := url.Parse(b.proxy.URL)
	require.NoError(t, err)
	queues := b.proxy.URL + "/api/v1/resources/queues"
	cookie := "token=" + alice

	for _, tc := range []struct {
		name string
		hdr  []string
		want int
	}{
		{"NoHeader", []string{"Cookie", cookie}, http.StatusForbidden},
		{"SameOrigin", []string{"Cookie", cookie, "Sec-Fetch-Site", "same-origin"}, http.StatusOK},
		{"Typed", []string{"Cookie", cookie, "Sec-Fetch-Site", "none"}, http.StatusOK},
		{"OurOrigin", []string{"Cookie", cookie, "Origin", "http://" + u.Host}, http.StatusOK},
		{"CrossSite", []string{"Cookie", cookie, "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"SameSite", []string{"Cookie", cookie, "Sec-Fetch-Site", "same-site"}, http.StatusForbidden},
		{"OtherOrigin", []string{"Cookie", cookie, "Origin", "http://evil.example"}, http.StatusForbidden},
		{"Bearer", []string{"Authorization", "Bearer " + alice}, http.StatusOK},
	} {
		r := send(t, http.MethodGet, queues, nil, tc.hdr...)
		require.Equal(t, tc.want, r.status, "%s: %s", tc.name, r.body)
		if tc.want == http.StatusForbidden {
			require.Equal(t, "forbidden", r.code(t), tc.name)
		}
	}

	require.Equal(t, http.StatusOK, send(t, http.MethodGet, b.proxy.URL+"/api/me", nil, "Cookie", cookie).status)
	r := send(t, http.MethodPost, b.proxy.URL+"/api/logout", nil, "Cookie", cookie)
	require.Equal(t, http.StatusForbidden, r.status, "a logout by cookie from nowhere: %s", r.body)
	require.Equal(t, http.StatusOK, send(t, http.MethodGet, b.proxy.URL+"/api/me", nil, "Cookie", cookie).status,
		"the refused logout ended the session")
	r = send(t, http.MethodPost, b.proxy.URL+"/api/logout", nil, "Cookie", cookie, "Sec-Fetch-Site", "same-origin")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, http.StatusUnauthorized, send(t, http.MethodGet, b.proxy.URL+"/api/me", nil, "Cookie", cookie).status)
}
