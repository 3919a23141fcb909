package gateway

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPurgeFallsBackWithoutTheDrop: a broker that has no tenancy drop (404, an earlier
// release) has the tenant's queues deleted one by one in its scope, a queue already
// gone counting as deleted; one that has it gets a single global drop naming the
// tenant in the body, without the tenancy header.
func TestPurgeFallsBackWithoutTheDrop(t *testing.T) {
	t.Parallel()
	for _, hasDrop := range []bool{false, true} {
		var (
			mu   sync.Mutex
			seen []string
		)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Method+" "+r.URL.EscapedPath()+" tenant="+r.Header.Get("X-Queen-Tenant"))
			mu.Unlock()
			switch {
			case r.URL.Path == "/internal/api/tenancy/drop" && hasDrop:
				_, _ = w.Write([]byte(`{"queuesDeleted":2,"kvDeleted":1}`))
			case r.URL.Path == "/api/v1/resources/queues":
				_, _ = w.Write([]byte(`{"queues":[{"name":"orders"},{"name":"gone"}]}`))
			case r.Method == http.MethodDelete && r.URL.Path == "/api/v1/resources/queues/orders":
				_, _ = w.Write([]byte(`{"deleted":true}`))
			default:
				http.NotFound(w, r)
			}
		}))
		t.Cleanup(srv.Close)
		base, err := url.Parse(srv.URL)
		require.NoError(t, err)
		n, err := Purge(t.Context(), PurgeTarget{Client: srv.Client(), Base: base, Header: "X-Queen-Tenant"}, "acme")
		require.NoError(t, err)
		require.Equal(t, 2, n)
		if hasDrop {
			require.Equal(t, []string{"POST /internal/api/tenancy/drop tenant="}, seen)
			continue
		}
		require.Equal(t, []string{"POST /internal/api/tenancy/drop tenant=", "GET /api/v1/resources/queues tenant=acme",
			"DELETE /api/v1/resources/queues/orders tenant=acme", "DELETE /api/v1/resources/queues/gone tenant=acme"}, seen)
	}
}
