package daemon_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
		conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
		require.NoError(t, err)
		defer conn.Close()
		require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
		_, err = fmt.Fprintf(conn, "POST /api/v1/push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", key.Key, len(body)+declaredExtra, body)
		require.NoError(t, err)
		require.NoError(t, conn.(*net.TCPConn).CloseWrite())
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			return "no answer"
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return fmt.Sprintf("%d %s", res.StatusCode, raw)
	}
	short, whole := send(17), send(0)
	t.Logf("short body: %s; whole body: %s", short, whole)
	require.NotRegexp(t, `^200 `, short, "a truncated push answered as a success")
	require.NotRegexp(t, `^200 $`, whole, "a push answered 200 with no body")
}
