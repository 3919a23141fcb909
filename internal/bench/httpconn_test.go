package bench

import (
	"bytes"
	"context"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// connServer is a test server that counts the connections opened to it.
type connServer struct {
	*httptest.Server
	conns atomic.Int64
}

func newConnServer(t *testing.T, tlsOn bool, h http.HandlerFunc) *connServer {
	t.Helper()
	s := &connServer{}
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	if tlsOn {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func TestConnPool(t *testing.T) {
	t.Parallel()

	t.Run("RequestsShareOneKeepAliveConnection", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var seen []string
		srv := newConnServer(t, false, func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			seen = append(seen, strings.Join([]string{r.Method, r.URL.RequestURI(), r.Host, r.Header.Get("Authorization"),
				r.Header.Get("Content-Type"), string(body)}, "|"))
			mu.Unlock()
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"n":` + string(body) + `}`))
		})
		h, err := newHTTPLoad(srv.URL, "tok")
		require.NoError(t, err)
		t.Cleanup(h.close)
		var buf bytes.Buffer
		for i := range 20 {
			body := []byte(strings.Repeat("7", i+1))
			status, err := h.do(t.Context(), http.MethodPost, "/api/v1/push?x=1", body, &buf)
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, status)
			require.Equal(t, `{"n":`+string(body)+`}`, buf.String())
		}
		status, err := h.do(t.Context(), http.MethodGet, "/health", nil, &buf)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, status)
		require.Equal(t, `{"n":}`, buf.String())
		require.EqualValues(t, 1, srv.conns.Load())
		require.Len(t, seen, 21)
		host := strings.TrimPrefix(srv.URL, "http://")
		require.Equal(t, "POST|/api/v1/push?x=1|"+host+"|Bearer tok|application/json|7", seen[0])
		require.Equal(t, "GET|/health|"+host+"|Bearer tok||", seen[20])
	})

	t.Run("AChunkedAnswerIsReadWhole", func(t *testing.T) {
		t.Parallel()
		srv := newConnServer(t, false, func(w http.ResponseWriter, _ *http.Request) {
			for _, part := range []string{"[1,", strings.Repeat(" ", 70_000), "2]"} {
				_, _ = w.Write([]byte(part))
				w.(http.Flusher).Flush()
			}
		})
		h, err := newHTTPLoad(srv.URL, "")
		require.NoError(t, err)
		t.Cleanup(h.close)
		var buf bytes.Buffer
		for range 2 {
			status, err := h.do(t.Context(), http.MethodGet, "/", nil, &buf)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, status)
			require.Equal(t, "[1,"+strings.Repeat(" ", 70_000)+"2]", buf.String())
		}
		require.EqualValues(t, 1, srv.conns.Load())
	})

	t.Run("AConnectionTheServerClosesIsNotReused", func(t *testing.T) {
		t.Parallel()
		srv := newConnServer(t, false, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Connection", "close")
			_, _ = w.Write([]byte("ok"))
		})
		h, err := newHTTPLoad(srv.URL, "")
		require.NoError(t, err)
		t.Cleanup(h.close)
		var buf bytes.Buffer
		for range 3 {
			status, err := h.do(t.Context(), http.MethodGet, "/", nil, &buf)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, status)
			require.Equal(t, "ok", buf.String())
			require.Empty(t, h.conns.idle, "kept for another request")
		}
		require.EqualValues(t, 3, srv.conns.Load())
	})

	t.Run("AStaleIdleConnectionIsReplaced", func(t *testing.T) {
		t.Parallel()
		srv := newConnServer(t, false, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
		h, err := newHTTPLoad(srv.URL, "")
		require.NoError(t, err)
		t.Cleanup(h.close)
		var buf bytes.Buffer
		_, err = h.do(t.Context(), http.MethodGet, "/", nil, &buf)
		require.NoError(t, err)
		srv.CloseClientConnections() // as an idle timeout would
		status, err := h.do(t.Context(), http.MethodPost, "/", []byte("{}"), &buf)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
		require.EqualValues(t, 2, srv.conns.Load())
	})

	t.Run("ARequestTheServerDropsIsSentAgainAtMostOnce", func(t *testing.T) {
		t.Parallel()
		var arrived atomic.Int64
		srv := newConnServer(t, false, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/ok" {
				_, _ = w.Write([]byte("ok"))
				return
			}
			arrived.Add(1)
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close() // no answer at all
			}
		})
		h, err := newHTTPLoad(srv.URL, "")
		require.NoError(t, err)
		t.Cleanup(h.close)
		var buf bytes.Buffer
		_, err = h.do(t.Context(), http.MethodGet, "/ok", nil, &buf) // the connection is now a reused one
		require.NoError(t, err)
		_, err = h.do(t.Context(), http.MethodPost, "/drop", []byte("{}"), &buf)
		require.ErrorContains(t, err, "POST /drop")
		require.EqualValues(t, 2, arrived.Load(), "once on the reused connection, once on a new one")
	})

	t.Run("CancellingAbortsARequestInFlight", func(t *testing.T) {
		t.Parallel()
		arrived, release := make(chan struct{}, 1), make(chan struct{})
		srv := newConnServer(t, false, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/park" {
				arrived <- struct{}{}
				<-release
			}
			_, _ = w.Write([]byte("ok"))
		})
		t.Cleanup(func() { close(release) })
		h, err := newHTTPLoad(srv.URL, "")
		require.NoError(t, err)
		t.Cleanup(h.close)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			var buf bytes.Buffer
			_, err := h.do(ctx, http.MethodGet, "/park", nil, &buf)
			done <- err
		}()
		<-arrived
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		var buf bytes.Buffer
		status, err := h.do(t.Context(), http.MethodGet, "/", nil, &buf)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
		require.EqualValues(t, 2, srv.conns.Load(), "the aborted connection is not reused")
	})

	t.Run("TheBaseURLsPathPrefixesEveryRequest", func(t *testing.T) {
		t.Parallel()
		srv := newConnServer(t, false, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(r.URL.Path)) })
		h, err := newHTTPLoad(srv.URL+"/tenant-a", "")
		require.NoError(t, err)
		t.Cleanup(h.close)
		var buf bytes.Buffer
		_, err = h.do(t.Context(), http.MethodGet, "/api/v1/x", nil, &buf)
		require.NoError(t, err)
		require.Equal(t, "/tenant-a/api/v1/x", buf.String())
	})

	t.Run("HTTPS", func(t *testing.T) {
		t.Parallel()
		srv := newConnServer(t, true, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(r.Proto)) })
		h, err := newHTTPLoad(srv.URL, "")
		require.NoError(t, err)
		t.Cleanup(h.close)
		roots := x509.NewCertPool()
		roots.AddCert(srv.Certificate())
		h.conns.tls.RootCAs = roots
		var buf bytes.Buffer
		for range 2 {
			_, err = h.do(t.Context(), http.MethodGet, "/", nil, &buf)
			require.NoError(t, err)
			require.Equal(t, "HTTP/1.1", buf.String())
		}
		require.EqualValues(t, 1, srv.conns.Load())
	})

	t.Run("OnlyHTTPAndHTTPS", func(t *testing.T) {
		t.Parallel()
		_, err := newHTTPLoad("ftp://127.0.0.1:1", "")
		require.ErrorContains(t, err, "scheme must be http or https")
	})
}
