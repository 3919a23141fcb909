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
)

// hashLen is how many hex digits of the tree hash name the asset directory: 48 bits, enough
// that two builds never collide in a cache.
const hashLen = 12

// asset is one response body, prepared at startup: its bytes, their gzip form when that is
// smaller, and the headers that do not depend on the request.
type asset struct {
	contentType  string
	cacheControl string
	body         []byte
	etag         string
	gz           []byte // nil when the type does not compress or gzip would not shrink it
	gzETag       string
}

// newAsset prepares body for serving under the given name (its extension picks the type).
func newAsset(name string, body []byte, cacheControl string) (*asset, error) {
	a := &asset{
		contentType:  contentType(name),
		cacheControl: cacheControl,
		body:         body,
		etag:         etagOf(body, ""),
	}
	if !compressible(a.contentType) {
		return a, nil
	}
	gz, err := gzipBytes(body)
	if err != nil {
		return nil, fmt.Errorf("gzip %s: %w", name, err)
	}
	if len(gz) < len(body) {
		a.gz = gz
		a.gzETag = etagOf(body, "-gz")
	}
	return a, nil
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

func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
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
