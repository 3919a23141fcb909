package browsertest

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
)

// TestServing checks the dashboard's answers through a whole broker, where the API's
// middleware and router sit in front of it: what the handler's own tests cannot see.
func TestServing(t *testing.T) {
	t.Parallel()
	srv := daemontest.Start(t, daemontest.Options{})
	get := func(t *testing.T, method, path string, hdr map[string]string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		require.NoError(t, err)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultTransport.RoundTrip(req) // no transparent gzip
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, string(b)
	}
	_, index := get(t, "GET", "/", nil)
	m := regexp.MustCompile(`src="(/assets/[0-9a-f]+/)app\.js"`).FindStringSubmatch(index)
	require.NotNil(t, m, "index.html loads app.js from the assets: %s", index)
	assets := m[1]

	t.Run("HeadHasNoBody", func(t *testing.T) {
		t.Parallel()
		res, body := get(t, "HEAD", "/", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"))
		require.Empty(t, body)
	})

	t.Run("RevalidatesThroughTheBroker", func(t *testing.T) {
		t.Parallel()
		res, _ := get(t, "GET", assets+"app.js", map[string]string{"Accept-Encoding": "gzip"})
		require.Equal(t, "gzip", res.Header.Get("Content-Encoding"))
		etag := res.Header.Get("ETag")
		require.NotEmpty(t, etag)
		again, body := get(t, "GET", assets+"app.js", map[string]string{"Accept-Encoding": "gzip", "If-None-Match": etag})
		require.Equal(t, http.StatusNotModified, again.StatusCode)
		require.Empty(t, body)
	})

	t.Run("NoEscapeFromTheAssets", func(t *testing.T) {
		t.Parallel()
		for _, p := range []string{assets + "..%2f..%2fgo.mod", assets + "%2e%2e/%2e%2e/index.html", "/assets/..%2findex.html",
			assets + "vendor/%2e%2e%2f%2e%2e%2fdashboard.go"} {
			res, body := get(t, "GET", p, nil)
			require.Equal(t, http.StatusNotFound, res.StatusCode, p)
			require.NotContains(t, body, "module github.com", p)
			require.NotContains(t, body, "package dashboard", p)
		}
	})

	t.Run("OtherMethodsKeepTheAPIAnswers", func(t *testing.T) {
		t.Parallel()
		for _, p := range []string{"/queues", "/", "/consumers"} {
			res, body := get(t, "POST", p, nil)
			require.Equal(t, http.StatusNotFound, res.StatusCode, p)
			require.Equal(t, "application/json", res.Header.Get("Content-Type"), p)
			require.True(t, strings.HasPrefix(body, "{"), "%s answers JSON: %s", p, body)
		}
	})

	t.Run("BrokerRoutesUnchanged", func(t *testing.T) {
		t.Parallel()
		res, body := get(t, "GET", "/health", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Contains(t, res.Header.Get("Content-Type"), "application/json")
		require.Contains(t, body, `"status":"healthy"`)
		res, body = get(t, "GET", "/metrics/prometheus", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Contains(t, body, "queen_build_info")
		res, body = get(t, "GET", "/metrics", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.NotContains(t, body, "<!doctype html>")
		res, body = get(t, "GET", "/api/v1/queues/nope/missing", nil)
		require.Equal(t, http.StatusNotFound, res.StatusCode)
		require.Contains(t, body, `"code":"no_such_route"`)
	})
}
