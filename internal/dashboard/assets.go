package dashboard

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// hashLen is how many hex digits of the tree hash name the asset directory: 48 bits, enough
// that two builds never collide in a cache.
const hashLen = 12

// asset is one response body, prepared at startup except for its gzip form: its bytes,
// and the headers that do not depend on the request.
type asset struct {
	contentType  string
	cacheControl string
	body         []byte
	etag         string
	gz           *gzipped // nil when the type does not compress
}

// gzipped is an asset's gzip form, made on the asset's first request: most brokers
// serve few of their dashboard's files or none, and compressing every file when the
// handler was made cost more than all the rest of it (dozens of files at gzip's best
// compression; over half a second of CPU under the race detector).
type gzipped struct {
	once sync.Once
	body []byte // nil when gzip would not shrink the asset
	etag string
}

// newAsset prepares body for serving under the given name (its extension picks the type).
func newAsset(name string, body []byte, cacheControl string) *asset {
	a := &asset{
		contentType:  contentType(name),
		cacheControl: cacheControl,
		body:         body,
		etag:         etagOf(body, ""),
	}
	if compressible(a.contentType) {
		a.gz = &gzipped{}
	}
	return a
}

// gzipForm returns a's gzip form and its ETag, or nil when there is none: the type does
// not compress, or gzip would not shrink it. The first call compresses.
func (a *asset) gzipForm() ([]byte, string) {
	if a.gz == nil {
		return nil, ""
	}
	a.gz.once.Do(func() {
		if gz := gzipBytes(a.body); len(gz) < len(a.body) {
			a.gz.body, a.gz.etag = gz, etagOf(a.body, "-gz")
		}
	})
	return a.gz.body, a.gz.etag
}

// readTree reads every regular file of fsys into memory, keyed by its slash-separated path.
func readTree(fsys fs.FS) (map[string][]byte, error) {
	files := make(map[string][]byte)
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		files[name] = b
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read dashboard files: %w", err)
	}
	return files, nil
}

// treeHash names one build of the files: SHA-256 over every name and its bytes in name
// order, index.html left out (it is served from / and revalidated on every load anyway).
func treeHash(files map[string][]byte) string {
	names := make([]string, 0, len(files))
	for name := range files {
		if name != indexName {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	h := sha256.New()
	for _, name := range names {
		b := files[name]
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:hashLen]
}

// renderIndex fills the index template's placeholders.
func renderIndex(tmpl []byte, vars map[string]string) []byte {
	out := tmpl
	for k, v := range vars {
		out = bytes.ReplaceAll(out, []byte("{{"+k+"}}"), []byte(v))
	}
	return out
}

// etagOf is a strong validator: a digest of the identity bytes, with a suffix per
// representation so the gzip form never shares the plain form's tag.
func etagOf(body []byte, suffix string) string {
	sum := sha256.Sum256(body)
	return strconv.Quote(hex.EncodeToString(sum[:8]) + suffix)
}

// gzipBytes compresses b at gzip's best compression. Writing to memory cannot fail.
func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // a valid level: no error
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

// contentType is the type of a file by its extension, from a fixed table rather than the
// system MIME database, so the answer does not depend on the machine. Modules need the
// exact JavaScript type. Files without an extension (LICENSE, VERSIONS) are plain text.
func contentType(name string) string {
	switch strings.ToLower(path.Ext(name)) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".json", ".map":
		return "application/json"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".ico":
		return "image/x-icon"
	case ".woff2":
		return "font/woff2"
	case ".txt", ".md", "":
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}

func compressible(ctype string) bool {
	return strings.HasPrefix(ctype, "text/") || strings.HasPrefix(ctype, "application/json") ||
		strings.HasPrefix(ctype, "image/svg+xml")
}

// isFileRequest reports whether p asks for a file rather than a page: its last segment
// has a dot (/app.js, /config.yaml, /.env, /manifest.webmanifest). Such a path that names
// no file is a 404, not a client route; no page of the app ends in one, but a queue page
// (see lookup).
func isFileRequest(p string) bool {
	return strings.Contains(p[strings.LastIndexByte(p, '/')+1:], ".")
}
