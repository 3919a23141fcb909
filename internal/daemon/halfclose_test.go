package daemon_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHalfClosedRequestIsNotAnsweredOK: a client that sends a body shorter than its
// Content-Length and closes its sending half waits for an answer; the broker must not
// send 200 with an empty body (net/http's default when a handler writes nothing),
// which reads as success. It closes the connection without an answer, and nothing is
// stored. A client that sends the whole body and half-closes is not told 200 either.
func TestHalfClosedRequestIsNotAnsweredOK(t *testing.T) {
	t.Parallel()
	tb := startBroker(t)
	send := func(queue string, declared int) string {
		body := fmt.Sprintf(`{"items":[{"queue":%q,"payload":1}]}`, queue)
		if declared == 0 {
			declared = len(body)
		}
		conn, err := net.DialTimeout("tcp", tb.addr, 5*time.Second)
		require.NoError(t, err)
		defer conn.Close()
		require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
		_, err = fmt.Fprintf(conn, "POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", declared, body)
		require.NoError(t, err)
		require.NoError(t, conn.(*net.TCPConn).CloseWrite())
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			return "no answer"
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return fmt.Sprintf("%d %s", res.StatusCode, b)
	}
	short := send("halfclose-short", 60)
	require.NotRegexp(t, `^200 `, short, "a truncated push answered as a success")
	full := send("halfclose-full", 0)
	require.NotRegexp(t, `^200 $`, full, "a push answered 200 with no body")

	code, body := tb.raw(t, http.MethodGet, "/api/v1/resources/queues/halfclose-short", "")
	require.Equal(t, http.StatusNotFound, code, "the truncated push stored something: %s", body)
	fullCode, _ := tb.raw(t, http.MethodGet, "/api/v1/resources/queues/halfclose-full", "")
	t.Logf("short body: %s; whole body: %s (its queue: %d)", short, full, fullCode)
}
