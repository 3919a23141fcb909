package daemon_test

import (
	"net/http"
	"testing"
)

// The health routes answer HEAD as they answer GET, on both listeners: a load
// balancer may probe with either.
func TestHealthRoutesAnswerHead(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	for _, base := range []string{b.proxy.URL, b.proxy.AdminURL} {
		for _, path := range []string{"/health", "/health/live", "/health/ready"} {
			for _, method := range []string{http.MethodGet, http.MethodHead} {
				r := call(t, method, base+path, "", nil)
				if r.status != http.StatusOK {
					t.Errorf("%s %s%s answered %d: %s", method, base, path, r.status, r.body)
				}
				if method == http.MethodHead && len(r.body) != 0 {
					t.Errorf("HEAD %s%s answered a body: %q", base, path, r.body)
				}
			}
		}
	}
}
