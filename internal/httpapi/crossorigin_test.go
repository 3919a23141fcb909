package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// TestCrossOriginWritesAreRefused: with authentication off, a page of another site
// cannot make the browser push, configure or drop anything (a text/plain POST needs no
// preflight), whether the browser says so with Sec-Fetch-Site or only with Origin;
// reads, same-origin pages (the dashboard), clients that are not browsers and the
// origins CORS_ALLOWED_ORIGINS allows pass.
func TestCrossOriginWritesAreRefused(t *testing.T) {
	t.Parallel()
	const push = `{"items":[{"queue":"xo","payload":1}]}`
	b := setup(t, Options{})
	host := strings.TrimPrefix(b.srv.URL, "http://")

	for _, tc := range []struct {
		name    string
		headers []string
	}{
		{"FetchMetadata", []string{"Content-Type", "text/plain", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}},
		{"SameSiteIsNotSameOrigin", []string{"Origin", "http://other.localhost", "Sec-Fetch-Site", "same-site"}},
		{"OriginAlone", []string{"Content-Type", "text/plain", "Origin", "https://evil.example"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.do(t, http.MethodPost, "/api/v1/push", push, tc.headers...)
			requireError(t, r, http.StatusForbidden, "forbidden", "cross-origin request refused: a page of another "+
				"origin may not change anything here unless CORS_ALLOWED_ORIGINS allows its origin", "")
		})
	}
	requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop/queue/xo?wait=false"))

	requireStatus(t, http.StatusCreated, b.do(t, http.MethodPost, "/api/v1/push", push)) // an SDK
	requireStatus(t, http.StatusCreated, b.do(t, http.MethodPost, "/api/v1/push", push,
		"Origin", "http://"+host, "Sec-Fetch-Site", "same-origin")) // the dashboard
	requireStatus(t, http.StatusCreated, b.do(t, http.MethodPost, "/api/v1/push", push, "Origin", "http://"+host))
	requireStatus(t, http.StatusOK, b.do(t, http.MethodGet, "/api/v1/resources/queues", "",
		"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")) // a read

	allowed := setup(t, Options{CORSAllowedOrigins: []string{"https://ops.example"}})
	requireStatus(t, http.StatusCreated, allowed.do(t, http.MethodPost, "/api/v1/push", push,
		"Origin", "https://ops.example", "Sec-Fetch-Site", "cross-site"))
	requireStatus(t, http.StatusForbidden, allowed.do(t, http.MethodPost, "/api/v1/push", push,
		"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"))
	anyOrigin := setup(t, Options{CORSAllowedOrigins: []string{"*"}})
	requireStatus(t, http.StatusCreated, anyOrigin.do(t, http.MethodPost, "/api/v1/push", push,
		"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"))
}
