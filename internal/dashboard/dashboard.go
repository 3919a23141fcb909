package dashboard

import (
	"embed"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// embedded holds the app as committed under dist/.
//
//go:embed all:dist
var embedded embed.FS

const (
	indexName   = "index.html"
	faviconName = "favicon.svg"
	assetsRoot  = "/assets/"

	// csp forbids inline script, style attributes in markup and every request off the
	// origin; images may also be data: URLs.
	csp = "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'"

	cacheImmutable = "public, max-age=31536000, immutable"
	cacheIndex     = "no-cache"
	cacheOther     = "public, max-age=3600"
)

// AuthMode tells the app how the broker authenticates API calls.
type AuthMode string

const (
	// AuthNone: the API needs no token (or a proxy in front adds it); the app shows no
	// sign-in screen.
	AuthNone AuthMode = "none"
	// AuthJWT: the API wants a bearer JWT; the app asks for one and sends it on /api calls.
	AuthJWT AuthMode = "jwt"
)

// Options configure New. WEBAPP_ROOT maps onto them in one line:
// Options{Dir: root, Disabled: isSet && root == ""} (unset: the embedded app; a
// directory: that directory; set but empty: no dashboard).
type Options struct {
	// Dir, when not empty, is a directory served instead of the embedded files. It is read
	// once, by New; restart to pick up changes.
	Dir string
	// Disabled turns the dashboard off: the handler claims no request.
	Disabled bool
	// Auth is written into index.html for the app; empty means AuthNone.
	Auth AuthMode
	// Version is the broker's version, shown by the app.
	Version string
}

// Handler serves the dashboard. Its zero value and a nil *Handler claim nothing.
type Handler struct {
	files    map[string]*asset // by path under the asset prefix, index.html excluded
	plain    map[string]*asset // a WEBAPP_ROOT's files by their own path (nil: embedded app)
	index    *asset            // rendered without the proxy hint
	proxyIdx *asset            // rendered with queen-proxy=1
	favicon  *asset
	prefix   string // "/assets/<hash>/"
}

// New reads the app (embedded, or opts.Dir), renders index.html, hashes and compresses
// every file. It fails when the files cannot be read or have no index.html.
func New(opts Options) (*Handler, error) {
	if opts.Disabled {
		return &Handler{}, nil
	}
	auth := opts.Auth
	switch auth {
	case "":
		auth = AuthNone
	case AuthNone, AuthJWT:
	default:
		return nil, fmt.Errorf("dashboard auth mode %q: want %q or %q", auth, AuthNone, AuthJWT)
	}
	fsys, err := source(opts.Dir)
	if err != nil {
		return nil, err
	}
	tree, err := readTree(fsys)
	if err != nil {
		return nil, err
	}
	tmpl, ok := tree[indexName]
	if !ok {
		return nil, errors.New("dashboard files have no index.html")
	}
	h := &Handler{
		files:  make(map[string]*asset, len(tree)),
		prefix: assetsRoot + treeHash(tree) + "/",
	}
	for name, body := range tree {
		if name == indexName {
			continue
		}
		h.files[name] = newAsset(name, body, cacheImmutable)
	}
	if opts.Dir != "" {
		// A build made for another server (upstream's webapp/dist, say) links its files
		// by their own paths (/assets/index-1a2b.js): they are served there too, with the
		// hour-long cache of a name that may change meaning.
		h.plain = make(map[string]*asset, len(h.files))
		for name, a := range h.files {
			own := *a
			own.cacheControl = cacheOther
			h.plain[name] = &own
		}
	}
	vars := map[string]string{
		"assets":  strings.TrimSuffix(h.prefix, "/"),
		"auth":    string(auth),
		"version": html.EscapeString(opts.Version),
		"proxy":   "",
	}
	h.index = newAsset(indexName, renderIndex(tmpl, vars), cacheIndex)
	vars["proxy"] = "1"
	h.proxyIdx = newAsset(indexName, renderIndex(tmpl, vars), cacheIndex)
	if b, ok := tree[faviconName]; ok {
		h.favicon = newAsset(faviconName, b, cacheOther)
	}
	return h, nil
}

// source is the file system to serve: dir when given, else the embedded dist/.
func source(dir string) (fs.FS, error) {
	if dir == "" {
		return fs.Sub(embedded, "dist")
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("dashboard directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("dashboard directory %s: not a directory", dir)
	}
	return os.DirFS(dir), nil
}

// AssetPrefix is the hashed URL prefix the app is served under ("/assets/<hash>/"), empty
// when the handler is off.
func (h *Handler) AssetPrefix() string {
	if h == nil {
		return ""
	}
	return h.prefix
}

// Wrap returns a handler that answers the requests the dashboard claims (see the package
// doc) and passes every other request to next untouched. Mount it where the router
// answers "no route", e.g. chi's NotFound: router.NotFound(dash.Wrap(jsonNotFound).ServeHTTP).
func (h *Handler) Wrap(next http.Handler) http.Handler {
	if h == nil || h.index == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := h.lookup(r)
		if a == nil {
			next.ServeHTTP(w, r)
			return
		}
		serve(w, r, a)
	})
}

// ServeHTTP serves what the dashboard claims and answers everything else with a JSON 404
// in the broker's error shape; a router would rather use Wrap with its own 404.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.Wrap(http.HandlerFunc(notFound)).ServeHTTP(w, r)
}

// Claims reports whether the dashboard would answer r itself.
func (h *Handler) Claims(r *http.Request) bool {
	return h != nil && h.index != nil && h.lookup(r) != nil
}

// lookup finds the asset answering r, or nil when r is not the dashboard's.
func (h *Handler) lookup(r *http.Request) *asset {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return nil
	}
	p := r.URL.Path
	if !strings.HasPrefix(p, "/") || reserved(p) || hasDotDot(p) {
		return nil
	}
	switch p {
	case "/", "/" + indexName:
		return h.indexFor(r)
	case "/favicon.ico":
		return h.favicon
	}
	if name, ok := strings.CutPrefix(p, h.prefix); ok {
		return h.files[name]
	}
	if a := h.plain[p[1:]]; a != nil {
		return a
	}
	if strings.HasPrefix(p, assetsRoot) {
		return nil
	}
	// /queues/:queueName is the app's only route with a name in its path (groups, messages
	// and traces take theirs in the query string), and a queue name may contain dots or an
	// encoded "/": under /queues/ any last segment is the app's.
	if isFileRequest(p) && !strings.HasPrefix(p, "/queues/") {
		return nil
	}
	return h.indexFor(r)
}

func (h *Handler) indexFor(r *http.Request) *asset {
	if r.Header.Get("X-Proxy-User") != "" {
		return h.proxyIdx
	}
	return h.index
}

// reserved reports whether p belongs to the broker whatever the files say: API, streams,
// internal, websocket, health and metrics paths keep the router's JSON answers, and
// so does a path with an empty segment ("//api/v1/…", from a base URL ending in "/"),
// which no page has.
func reserved(p string) bool {
	if strings.Contains(p, "//") {
		return true
	}
	for _, pre := range []string{"/api", "/streams", "/internal", "/ws"} {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	return strings.HasPrefix(p, "/health") || strings.HasPrefix(p, "/metrics")
}

func hasDotDot(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if seg == ".." || seg == "." {
			return true
		}
	}
	return strings.Contains(p, "\\") || strings.Contains(p, "\x00")
}

// serve writes a with the representation the request accepts, or 304 when the client's
// copy is current.
func serve(w http.ResponseWriter, r *http.Request, a *asset) {
	hdr := w.Header()
	hdr.Set("Content-Type", a.contentType)
	hdr.Set("Cache-Control", a.cacheControl)
	hdr.Set("Content-Security-Policy", csp)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	gz, gzETag := a.gzipForm()
	vary := []string{}
	if gz != nil {
		vary = append(vary, "Accept-Encoding")
	}
	if a.contentType == contentType(indexName) {
		vary = append(vary, "X-Proxy-User")
	}
	if len(vary) > 0 {
		hdr.Set("Vary", strings.Join(vary, ", "))
	}
	body, etag := a.body, a.etag
	if gz != nil && acceptsGzip(r.Header.Values("Accept-Encoding")) {
		body, etag = gz, gzETag
		hdr.Set("Content-Encoding", "gzip")
	}
	hdr.Set("ETag", etag)
	if etagMatch(r.Header.Values("If-None-Match"), etag) {
		hdr.Del("Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body) // a client that went away is no error of ours
	}
}

// acceptsGzip reads Accept-Encoding: gzip (or *) listed without q=0.
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != "gzip" && coding != "*" {
				continue
			}
			q := 1.0
			for param := range strings.SplitSeq(params, ";") {
				k, v, ok := strings.Cut(strings.TrimSpace(param), "=")
				if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
						q = f
					}
				}
			}
			if q > 0 {
				return true
			}
		}
	}
	return false
}

// etagMatch applies If-None-Match with the weak comparison the header calls for.
func etagMatch(values []string, etag string) bool {
	for _, v := range values {
		for tag := range strings.SplitSeq(v, ",") {
			tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
			if tag == "*" || tag == etag {
				return true
			}
		}
	}
	return false
}

func notFound(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(`{"error":"Not found","code":"not_found"}` + "\n"))
}
