package daemon_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
)

// TestHalfClosedRequestIsNotAnsweredOK: a client that sends a body shorter than its
// Content-Length and closes its sending half waits for an answer; the broker must not
// send 200 with an empty body (net/http's default when a handler writes nothing),
// which reads as success. It closes the connection without an answer, and nothing is
// stored. A client that sends the whole body and half-closes is not told 200 either.
func TestHalfClosedRequestIsNotAnsweredOK(t *testing.T) {
	t.Parallel()
	tb := startBroker(t)
	send := func(queue string, declaredExtra int) string {
		body := fmt.Sprintf(`{"items":[{"queue":%q,"payload":1}]}`, queue)
		got, err := daemontest.HalfClosedExchange(tb.addr, fmt.Sprintf("POST /api/v1/push HTTP/1.1\r\nHost: x\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body)+declaredExtra, body))
		require.NoError(t, err)
		return got
	}
	short := send("halfclose-short", 17)
	require.NotRegexp(t, `^200 `, short, "a truncated push answered as a success")
	full := send("halfclose-full", 0)
	require.NotRegexp(t, `^200 $`, full, "a push answered 200 with no body")

	code, body := tb.raw(t, http.MethodGet, "/api/v1/resources/queues/halfclose-short", "")
	require.Equal(t, http.StatusNotFound, code, "the truncated push stored something: %s", body)
	fullCode, _ := tb.raw(t, http.MethodGet, "/api/v1/resources/queues/halfclose-full", "")
	t.Logf("short body: %s; whole body: %s (its queue: %d)", short, full, fullCode)
}
