package appliance

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/testclock"
)

// The HTTP server runs in a synctest bubble on an in-memory listener (memListener,
// watchdog_test.go): the read timeout is a real net/http deadline on the
// connection, but it expires on the bubble's fake clock, so a body dribbled over
// seconds and an answer held for minutes take no real time.

// servedHTTP runs NewHTTPServer with readTimeout and h on an in-memory listener until
// the bubble's test ends, and returns the listener.
func servedHTTP(t *testing.T, readTimeout time.Duration, h http.Handler) *memListener {
	t.Helper()
	srv := NewHTTPServer(h, readTimeout, slog.New(slog.DiscardHandler), slog.LevelWarn)
	ln := newMemListener()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		require.ErrorIs(t, <-served, http.ErrServerClosed)
	})
	return ln
}

// dribble writes body one byte every interval, until it is all written or a write fails
// (the server closed the connection); it returns how many bytes were written.
func dribble(c net.Conn, body string, interval time.Duration) <-chan int {
	written := make(chan int, 1)
	go func() {
		n := 0
		for n < len(body) {
			if _, err := c.Write([]byte{body[n]}); err != nil {
				break
			}
			n++
			testclock.AdvanceBubble(interval)
		}
		written <- n
	}()
	return written
}

// TestReadTimeoutClosesASlowBody: a client that sends its headers and then its body
// slower than the read timeout allows has the body read fail at the deadline, counted
// from the start of the request, and its connection closed.
func TestReadTimeoutClosesASlowBody(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		type failure struct {
			err error
			at  time.Time
		}
		failed := make(chan failure, 1)
		ln := servedHTTP(t, 2*time.Second, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, err := io.ReadAll(r.Body)
			failed <- failure{err, time.Now()}
			if err != nil {
				http.Error(w, "slow body", http.StatusBadRequest)
			}
		}))
		c, err := ln.dial()
		require.NoError(t, err)
		defer c.Close()
		start := time.Now()
		body := strings.Repeat("x", 100)
		_, err = io.WriteString(c, "POST /api/v1/push HTTP/1.1\r\nHost: queen\r\nContent-Type: application/json\r\n"+
			"Content-Length: 100\r\n\r\n")
		require.NoError(t, err)
		written := dribble(c, body, 600*time.Millisecond) // 100 bytes would take a minute

		require.NoError(t, c.SetReadDeadline(start.Add(time.Minute)))
		answer, err := io.ReadAll(c) // up to the server's close
		require.NoError(t, err, "the server closes the connection; the client's deadline does not expire")
		require.True(t, strings.HasPrefix(string(answer), "HTTP/1.1 400 "), "answer: %q", answer)
		f := <-failed
		require.ErrorIs(t, f.err, os.ErrDeadlineExceeded)
		require.Equal(t, 2*time.Second, f.at.Sub(start), "the deadline is the read timeout after the request began")
		require.Equal(t, 4, <-written, "bytes at 0, 0.6, 1.2 and 1.8 s; the write at 2.4 s finds the connection closed")
	})
}

// TestReadTimeoutSparesTheAnswer: the deadline covers reading the request only. A
// long-poll without a body, a request whose handler takes long after reading its body,
// and a streamed answer all run far past the read timeout, with their request context
// alive; a slow body that arrives within the deadline is read whole.
func TestReadTimeoutSparesTheAnswer(t *testing.T) {
	t.Parallel()
	const hold = 5 * time.Minute // far past the 2 s read timeout
	for _, tc := range []struct {
		name, request, body string
		every               time.Duration // body byte interval; 0 writes it at once
		want                string
	}{
		{name: "LongPoll", request: "GET /api/v1/pop/queue/q?wait=true HTTP/1.1\r\nHost: queen\r\n\r\n", want: "first|second"},
		{name: "AfterTheBody", request: "POST /api/v1/transaction HTTP/1.1\r\nHost: queen\r\nContent-Length: 2\r\n\r\n",
			body: "{}", want: "{}|first|second"},
		{name: "SlowButTimelyBody", request: "POST /api/v1/push HTTP/1.1\r\nHost: queen\r\nContent-Length: 4\r\n\r\n",
			body: "abcd", every: 450 * time.Millisecond, want: "abcd|first|second"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ln := servedHTTP(t, 2*time.Second, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, err := io.ReadAll(r.Body)
					if err != nil {
						http.Error(w, err.Error(), http.StatusBadRequest)
						return
					}
					if len(body) > 0 {
						_, _ = w.Write(append(body, '|'))
					}
					_, _ = io.WriteString(w, "first|") // streamed: sent before the wait
					http.NewResponseController(w).Flush()
					select {
					case <-r.Context().Done():
						_, _ = io.WriteString(w, "cut: "+context.Cause(r.Context()).Error())
					case <-time.After(hold):
						_, _ = io.WriteString(w, "second")
					}
				}))
				c, err := ln.dial()
				require.NoError(t, err)
				defer c.Close()
				start := time.Now()
				_, err = io.WriteString(c, tc.request)
				require.NoError(t, err)
				if tc.every > 0 {
					require.Equal(t, len(tc.body), <-dribble(c, tc.body, tc.every))
				} else {
					_, err = io.WriteString(c, tc.body)
					require.NoError(t, err)
				}

				require.NoError(t, c.SetReadDeadline(start.Add(2*hold)))
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				require.NoError(t, err)
				defer resp.Body.Close()
				require.Equal(t, http.StatusOK, resp.StatusCode)
				got, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.Equal(t, tc.want, string(got))
				require.GreaterOrEqual(t, time.Since(start), hold)
			})
		})
	}
}

// TestHTTPServerTimeouts: the server reads the daemon's read timeout (0 for none) and
// has no write timeout; the stop closes the listener it serves.
func TestHTTPServerTimeouts(t *testing.T) {
	t.Parallel()
	require.Zero(t, NewHTTPServer(http.NotFoundHandler(), 0, slog.New(slog.DiscardHandler), slog.LevelWarn).ReadTimeout)
	ln := newMemListener()
	s := NewServer(ln, NewHTTPServer(http.NotFoundHandler(), time.Minute, slog.New(slog.DiscardHandler), slog.LevelWarn),
		slog.New(slog.DiscardHandler))
	srv := s.HTTP()
	require.Equal(t, time.Minute, srv.ReadTimeout)
	require.Equal(t, ReadHeaderTimeout, srv.ReadHeaderTimeout)
	require.Zero(t, srv.WriteTimeout, "a write timeout would cut long-polls")

	served := make(chan error, 1)
	go func() { served <- s.Serve(t.Context()) }()
	s.StopAccepting(time.Minute, "TEST_SHUTDOWN_TIMEOUT")
	s.Drain()
	require.NoError(t, <-served, "a shutdown is the normal end of serving")
	_, err := ln.dial()
	require.ErrorIs(t, err, net.ErrClosed, "the listener is closed")
}
