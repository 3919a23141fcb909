package daemon_test

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
)

// TestHalfClosedRequestIsNotAnsweredOK: a client that sends a push with a body shorter
// than its Content-Length, or whole, and then closes its sending half waits for an
// answer; the proxy must not send 200 with an empty body (net/http's default when a
// handler writes nothing), which reads as success.
func TestHalfClosedRequestIsNotAnsweredOK(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	createTenant(t, b.proxy, tenantSpec{ID: "acme"})
	key := createKey(t, b.proxy, "acme", "write")
	u, err := url.Parse(b.proxy.URL)
	require.NoError(t, err)
	send := func(declaredExtra int) string {
		body := `{"items":[{"queue":"halfclose","payload":1}]}`
		got, err := daemontest.HalfClosedExchange(u.Host, fmt.Sprintf("POST /api/v1/push HTTP/1.1\r\nHost: x\r\n"+
			"Authorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			key.Key, len(body)+declaredExtra, body))
		require.NoError(t, err)
		return got
	}
	short, whole := send(17), send(0)
	t.Logf("short body: %s; whole body: %s", short, whole)
	require.NotRegexp(t, `^200 `, short, "a truncated push answered as a success")
	require.NotRegexp(t, `^200 $`, whole, "a push answered 200 with no body")
}
