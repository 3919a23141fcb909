package dashboard

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// passStatus marks a response written by the next handler, i.e. a request the dashboard
// did not claim.
const passStatus = http.StatusTeapot

type testBundle struct {
	h    *Handler
	srv  http.Handler
	pref string
}

func setup(t *testing.T, opts Options) *testBundle {
	t.Helper()
	h, err := New(opts)
	require.NoError(t, err)
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(passStatus) })
	return &testBundle{h: h, srv: h.Wrap(next), pref: h.AssetPrefix()}
}

func (b *testBundle) do(t *testing.T, method, target string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	b.srv.ServeHTTP(rec, req)
	return rec
}

func TestPaths(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	require.Regexp(t, `^/assets/[0-9a-f]{12}/$`, b.pref)

	tests := []struct {
		name, method, target string
		status               int
		ctype                string
	}{
		{"Root", "GET", "/", 200, "text/html; charset=utf-8"},
		{"IndexName", "GET", "/index.html", 200, "text/html; charset=utf-8"},
		{"ClientRoute", "GET", "/consumers?search=billing", 200, "text/html; charset=utf-8"},
		{"QueueWithDot", "GET", "/queues/e2e.orders", 200, "text/html; charset=utf-8"},
		{"QueueEndingInJS", "GET", "/queues/weird.js", 200, "text/html; charset=utf-8"},
		{"QueueWithSlashAndDot", "GET", "/queues/a%2Fb.c", 200, "text/html; charset=utf-8"},
		{"QueueTabWithDot", "GET", "/queues/e2e.orders?tab=Settings", 200, "text/html; charset=utf-8"},
		{"GroupSearchWithDot", "GET", "/consumers?search=billing.eu", 200, "text/html; charset=utf-8"},
		{"MessagesWithDottedIDs", "GET", "/messages?queue=e2e.orders&open=0190.a/tx.1", 200, "text/html; charset=utf-8"},
		{"TraceNameWithDot", "GET", "/traces?name=order.created", 200, "text/html; charset=utf-8"},
		{"DotBeforeLastSegment", "GET", "/v1.2/queues", 200, "text/html; charset=utf-8"},
		{"HeadRoot", "HEAD", "/", 200, "text/html; charset=utf-8"},
		{"Module", "GET", b.pref + "app.js", 200, "text/javascript; charset=utf-8"},
		{"VendorModule", "GET", b.pref + "vendor/preact.mjs", 200, "text/javascript; charset=utf-8"},
		{"Stylesheet", "GET", b.pref + "app.css", 200, "text/css; charset=utf-8"},
		{"Favicon", "GET", "/favicon.ico", 200, "image/svg+xml"},
		{"APIPath", "GET", "/api/v1/nope", passStatus, ""},
		{"APIRoot", "GET", "/api", passStatus, ""},
		{"Health", "GET", "/health", passStatus, ""},
		{"HealthReady", "GET", "/health/ready", passStatus, ""},
		{"Metrics", "GET", "/metrics", passStatus, ""},
		{"MetricsPrometheus", "GET", "/metrics/prometheus", passStatus, ""},
		{"Streams", "GET", "/streams/v1/queries", passStatus, ""},
		{"Internal", "GET", "/internal/api/shared-state/stats", passStatus, ""},
		{"WebSocket", "GET", "/ws/peer", passStatus, ""},
		{"PostClientRoute", "POST", "/queues", passStatus, ""},
		{"DeleteRoot", "DELETE", "/", passStatus, ""},
		{"MissingFile", "GET", "/missing.js", passStatus, ""},
		{"MissingUnlistedExt", "GET", "/foo.bar", passStatus, ""},
		{"MissingYAML", "GET", "/config.yaml", passStatus, ""},
		{"MissingDotfile", "GET", "/.env", passStatus, ""},
		{"MissingPHP", "GET", "/wp-login.php", passStatus, ""},
		{"MissingManifest", "GET", "/manifest.webmanifest", passStatus, ""},
		{"MissingNestedFile", "GET", "/static/js/main.chunk.js", passStatus, ""},
		{"HeadMissingFile", "HEAD", "/config.yaml", passStatus, ""},
		{"MissingAsset", "GET", b.pref + "nope.js", passStatus, ""},
		{"StaleHash", "GET", "/assets/000000000000/app.js", passStatus, ""},
		{"UnhashedAsset", "GET", "/assets/app.js", passStatus, ""},
		{"EncodedDotDot", "GET", b.pref + "%2e%2e/%2e%2e/dashboard.go", passStatus, ""},
		{"DotDot", "GET", "/queues/../api/v1/x", passStatus, ""},
		{"IndexUnderAssets", "GET", b.pref + "index.html", passStatus, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := b.do(t, tc.method, tc.target, nil)
			require.Equal(t, tc.status, rec.Code)
			if tc.ctype != "" {
				require.Equal(t, tc.ctype, rec.Header().Get("Content-Type"))
			}
			if tc.method == "HEAD" {
				require.Empty(t, rec.Body.Bytes())
				require.NotEqual(t, "0", rec.Header().Get("Content-Length"))
			}
		})
	}
}

func TestServeHTTPAnswersJSON404(t *testing.T) {
	t.Parallel()
	h, err := New(Options{})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/nope", nil))
	require.Equal(t, http.StatusNotFound, rec.Code)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	require.JSONEq(t, `{"error":"Not found","code":"not_found"}`, rec.Body.String())
	require.True(t, h.Claims(httptest.NewRequest("GET", "/queues", nil)))
	require.False(t, h.Claims(httptest.NewRequest("GET", "/api/v1/queues", nil)))
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	for _, target := range []string{"/", "/messages", b.pref + "app.js", "/favicon.ico"} {
		rec := b.do(t, "GET", target, nil)
		require.Equal(t, 200, rec.Code, target)
		require.Equal(t, "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'",
			rec.Header().Get("Content-Security-Policy"), target)
		require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"), target)
		require.Equal(t, "no-referrer", rec.Header().Get("Referrer-Policy"), target)
		require.NotEmpty(t, rec.Header().Get("ETag"), target)
	}
	require.Equal(t, "no-cache", b.do(t, "GET", "/", nil).Header().Get("Cache-Control"))
	require.Equal(t, "no-cache", b.do(t, "GET", "/queues/x", nil).Header().Get("Cache-Control"))
	require.Equal(t, "public, max-age=31536000, immutable", b.do(t, "GET", b.pref+"app.js", nil).Header().Get("Cache-Control"))
	require.Equal(t, "public, max-age=3600", b.do(t, "GET", "/favicon.ico", nil).Header().Get("Cache-Control"))
}

func TestETagRevalidation(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	for _, target := range []string{"/", b.pref + "app.js"} {
		first := b.do(t, "GET", target, nil)
		etag := first.Header().Get("ETag")
		require.Regexp(t, `^"[0-9a-f]{16}"$`, etag)

		again := b.do(t, "GET", target, map[string]string{"If-None-Match": etag})
		require.Equal(t, http.StatusNotModified, again.Code, target)
		require.Empty(t, again.Body.Bytes())
		require.Equal(t, etag, again.Header().Get("ETag"))

		list := b.do(t, "GET", target, map[string]string{"If-None-Match": `"other", W/` + etag})
		require.Equal(t, http.StatusNotModified, list.Code, target)

		stale := b.do(t, "GET", target, map[string]string{"If-None-Match": `"0000"`})
		require.Equal(t, http.StatusOK, stale.Code, target)

		gz := b.do(t, "GET", target, map[string]string{"Accept-Encoding": "gzip"})
		require.NotEqual(t, etag, gz.Header().Get("ETag"), "the gzip form has a tag of its own")
		notMod := b.do(t, "GET", target, map[string]string{"Accept-Encoding": "gzip", "If-None-Match": gz.Header().Get("ETag")})
		require.Equal(t, http.StatusNotModified, notMod.Code)
	}
}

func TestGzip(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	plain := b.do(t, "GET", b.pref+"app.css", nil)
	require.Empty(t, plain.Header().Get("Content-Encoding"))
	require.Equal(t, "Accept-Encoding", plain.Header().Get("Vary"))

	for _, ae := range []string{"gzip", "gzip, deflate, br", "br;q=1, gzip;q=0.5", "*"} {
		rec := b.do(t, "GET", b.pref+"app.css", map[string]string{"Accept-Encoding": ae})
		require.Equal(t, "gzip", rec.Header().Get("Content-Encoding"), ae)
		require.Equal(t, "Accept-Encoding", rec.Header().Get("Vary"))
		zr, err := gzip.NewReader(bytes.NewReader(rec.Body.Bytes()))
		require.NoError(t, err)
		got, err := io.ReadAll(zr)
		require.NoError(t, err)
		require.Equal(t, plain.Body.Bytes(), got, ae)
		require.Less(t, rec.Body.Len(), plain.Body.Len())
	}
	for _, ae := range []string{"", "identity", "br", "gzip;q=0", "deflate, gzip; q=0.0"} {
		rec := b.do(t, "GET", b.pref+"app.css", map[string]string{"Accept-Encoding": ae})
		require.Empty(t, rec.Header().Get("Content-Encoding"), ae)
	}
	idx := b.do(t, "GET", "/", map[string]string{"Accept-Encoding": "gzip"})
	require.Equal(t, "gzip", idx.Header().Get("Content-Encoding"))
	require.Equal(t, "Accept-Encoding, X-Proxy-User", idx.Header().Get("Vary"))
}

// TestGzipFirstRequestsAtOnce: an asset's gzip form is made by its first request;
// requests arriving together all get the same one, whichever encoding they accept.
func TestGzipFirstRequestsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	target := b.pref + "app.js"
	recs := make([]*httptest.ResponseRecorder, 8)
	var wg sync.WaitGroup
	for i := range recs {
		hdr := map[string]string{"Accept-Encoding": "gzip"}
		if i%2 == 1 {
			hdr = nil
		}
		wg.Go(func() { recs[i] = b.do(t, "GET", target, hdr) })
	}
	wg.Wait()
	for i, rec := range recs {
		require.Equal(t, http.StatusOK, rec.Code, i)
		require.Equal(t, "Accept-Encoding", rec.Header().Get("Vary"), i)
		require.Equal(t, recs[i%2].Header().Get("ETag"), rec.Header().Get("ETag"), i)
		require.Equal(t, recs[i%2].Body.Bytes(), rec.Body.Bytes(), i)
	}
	zr, err := gzip.NewReader(bytes.NewReader(recs[0].Body.Bytes()))
	require.NoError(t, err)
	got, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Equal(t, recs[1].Body.Bytes(), got)
}

func TestIndexTemplate(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{Auth: AuthJWT, Version: `1.2.3"<x>`})
	body := b.do(t, "GET", "/", nil).Body.String()
	require.Contains(t, body, `<meta name="queen-auth" content="jwt">`)
	require.Contains(t, body, `<meta name="queen-version" content="1.2.3&#34;&lt;x&gt;">`)
	require.Contains(t, body, `<meta name="queen-proxy" content="">`)
	require.Contains(t, body, `src="`+b.pref+`app.js"`)
	require.NotContains(t, body, "{{")

	proxied := b.do(t, "GET", "/queues", map[string]string{"X-Proxy-User": "alice"})
	require.Contains(t, proxied.Body.String(), `<meta name="queen-proxy" content="1">`)
	require.NotEqual(t, proxied.Header().Get("ETag"), b.do(t, "GET", "/queues", nil).Header().Get("ETag"))

	none := setup(t, Options{})
	require.Contains(t, none.do(t, "GET", "/", nil).Body.String(), `<meta name="queen-auth" content="none">`)

	_, err := New(Options{Auth: "basic"})
	require.ErrorContains(t, err, `auth mode "basic"`)
}

func TestDisabled(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{Disabled: true})
	require.Empty(t, b.pref)
	require.Equal(t, passStatus, b.do(t, "GET", "/", nil).Code)
	require.Equal(t, passStatus, b.do(t, "GET", "/queues", nil).Code)
	require.False(t, b.h.Claims(httptest.NewRequest("GET", "/", nil)))

	var nilHandler *Handler
	require.False(t, nilHandler.Claims(httptest.NewRequest("GET", "/", nil)))
}

func TestDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "index.html"), []byte(`<script type="module" src="{{assets}}/main.js"></script>`), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "main.js"), []byte(`export const x = 1;`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.js"), []byte(`import "./sub/main.js";`), 0o644))
	b := setup(t, Options{Dir: dir})
	require.Contains(t, b.do(t, "GET", "/", nil).Body.String(), b.pref+"main.js")
	rec := b.do(t, "GET", b.pref+"sub/main.js", nil)
	require.Equal(t, 200, rec.Code)
	require.Equal(t, "export const x = 1;", rec.Body.String())
	require.NotEqual(t, setup(t, Options{}).pref, b.pref, "another tree, another hash")

	// A build for another server links its files by their own paths: served there too.
	rec = b.do(t, "GET", "/sub/main.js", nil)
	require.Equal(t, 200, rec.Code)
	require.Equal(t, "export const x = 1;", rec.Body.String())
	require.Equal(t, cacheOther, rec.Header().Get("Cache-Control"), "a plain name is not immutable")
	require.Equal(t, passStatus, b.do(t, "GET", "/sub/other.js", nil).Code)
	require.Equal(t, passStatus, setup(t, Options{}).do(t, "GET", "/app.js", nil).Code, "the embedded app has no plain paths")

	_, err := New(Options{Dir: filepath.Join(dir, "sub")})
	require.ErrorContains(t, err, "no index.html")
	_, err = New(Options{Dir: filepath.Join(dir, "main.js")})
	require.ErrorContains(t, err, "not a directory")
	_, err = New(Options{Dir: filepath.Join(dir, "absent")})
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// appFiles is the embedded app, by path.
func appFiles(t *testing.T) map[string][]byte {
	t.Helper()
	fsys, err := source("")
	require.NoError(t, err)
	files, err := readTree(fsys)
	require.NoError(t, err)
	return files
}

func TestBudget(t *testing.T) {
	t.Parallel()
	// What a first visit downloads. The gzipped budget was 80 KiB until the fixes for
	// long names, wide queues and ids holding "/" took the app to 80.5 KiB.
	const maxRaw, maxGzip = 250 << 10, 88 << 10
	raw, gz := 0, 0
	for _, b := range appFiles(t) {
		raw += len(b)
		gz += min(len(gzipBytes(b)), len(b))
	}
	t.Logf("dashboard: %d bytes raw, %d bytes gzipped", raw, gz)
	require.LessOrEqual(t, raw, maxRaw, "raw size over budget")
	require.LessOrEqual(t, gz, maxGzip, "gzipped size over budget")
}

var (
	htmlRef   = regexp.MustCompile(`(?:src|href)="([^"]+)"`)
	importRef = regexp.MustCompile(`(?m)(?:^\s*(?:import|export)\b[^;'"]*?\bfrom\s*|^\s*import\s*|\bimport\(\s*)["']([^"']+)["']`)
	cssRef    = regexp.MustCompile(`url\(\s*['"]?([^'")]+)`)
)

// TestReferences fails on a broken link: every URL index.html names must be served, and
// every module specifier and stylesheet URL must name a file of the app.
func TestReferences(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	index := b.do(t, "GET", "/", nil).Body.String()
	refs := htmlRef.FindAllStringSubmatch(index, -1)
	require.NotEmpty(t, refs)
	for _, m := range refs {
		rec := b.do(t, "GET", m[1], nil)
		require.Equal(t, 200, rec.Code, "index.html references %s", m[1])
	}

	files := appFiles(t)
	checked := 0
	for name, body := range files {
		var found [][]string
		switch path.Ext(name) {
		case ".js", ".mjs":
			found = importRef.FindAllStringSubmatch(string(body), -1)
		case ".css":
			found = cssRef.FindAllStringSubmatch(string(body), -1)
		default:
			continue
		}
		for _, m := range found {
			spec := m[1]
			if strings.HasPrefix(spec, "data:") {
				continue
			}
			require.True(t, strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../"),
				"%s imports %q: only relative specifiers resolve without an import map", name, spec)
			target := path.Join(path.Dir(name), spec)
			_, ok := files[target]
			require.True(t, ok, "%s imports %q, and %s does not exist", name, spec, target)
			checked++
		}
	}
	require.Greater(t, checked, 20, "the import scan found too few imports to be working")
}

// TestContentPolicy checks what the Content-Security-Policy would block: inline script,
// style attributes and inline handlers in index.html, and any URL off the origin.
func TestContentPolicy(t *testing.T) {
	t.Parallel()
	files := appFiles(t)
	index := string(files[indexName])
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(index, -1) {
		require.Contains(t, tag, "src=", "inline script: %s", tag)
	}
	require.NotRegexp(t, `\sstyle=`, index)
	require.NotRegexp(t, `\son[a-z]+=`, index)

	offOrigin := regexp.MustCompile(`(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for name, body := range files {
		ext := path.Ext(name)
		if strings.HasPrefix(name, "vendor/") || (ext != ".js" && ext != ".css" && ext != ".html" && ext != ".svg") {
			continue
		}
		for _, u := range offOrigin.FindAllString(string(body), -1) {
			require.Contains(t, u, "www.w3.org", "%s names an off-origin URL %s", name, u)
		}
	}
}
