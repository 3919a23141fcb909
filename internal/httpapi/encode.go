package httpapi

import (
	"net/http"
	"sync"
	"unicode/utf8"

	"github.com/queenmq/queen/internal/jsonscan"
)

// The hot routes (push, ack, pop) render their answers with the append functions of
// encode_pop.go and encode_results.go instead of encoding/json. Their output is byte
// for byte what encodeJSON renders for the api types (encode_test.go compares the
// two), which includes two quirks worth knowing:
//   - Types with a MarshalJSON method that calls json.Marshal (api.PushResult,
//     api.PopResponse) come out HTML-escaped (<, >, & as \u003c, \u003e, \u0026),
//     payloads included, although encodeJSON turns HTML escaping off: json.Marshal
//     escapes and the outer encoder only compacts. api.AckResult has no such method
//     and is not escaped.
//   - encoding/json compacts json.RawMessage, and payloads read from jsonb are not
//     compact (PostgreSQL writes {"a": 1, "b": [1, 2]}), so appendPayload compacts.

// maxPooledBuffer bounds the answer buffers kept for reuse, so one huge answer does
// not pin its buffer.
const maxPooledBuffer = 1 << 20

// answerBuffers recycles the buffers answers are rendered into (Server.buffers). A
// buffer is free again once written: http.ResponseWriter.Write does not retain it.
type answerBuffers struct{ pool sync.Pool }

func (ab *answerBuffers) get() *[]byte {
	if bp, ok := ab.pool.Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, 0, 4096)
	return &b
}

func (ab *answerBuffers) put(bp *[]byte) {
	if cap(*bp) <= maxPooledBuffer {
		*bp = (*bp)[:0]
		ab.pool.Put(bp)
	}
}

// writeAppended renders an answer with appendFunc into a pooled buffer and writes it
// with status, like writeJSON: an error from appendFunc is returned before anything is
// written.
func (s *Server) writeAppended(w http.ResponseWriter, status int, appendFunc func([]byte) ([]byte, error)) error {
	bp := s.buffers.get()
	b, err := appendFunc((*bp)[:0])
	if err == nil {
		writeBytes(w, status, b)
	}
	*bp = b
	s.buffers.put(bp)
	return err
}

// appendString appends s as a JSON string exactly as encoding/json does: invalid
// UTF-8 as \ufffd, U+2028 and U+2029 escaped, and <, >, & escaped when html.
func appendString(dst []byte, s string, html bool) []byte {
	stops, kind := &plainStringStops, jsonscan.RunString
	if html {
		stops, kind = &htmlStringStops, jsonscan.RunStringHTML
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; ; {
		if i = jsonscan.IndexStop(s, i, stops, kind); i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += n
			continue
		}
		i += n
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// plainStringStops and htmlStringStops mark the bytes appendString cannot copy as they
// are: control characters, the quote, the backslash, every non-ASCII byte (checked for
// UTF-8 and U+2028/U+2029), and for HTML also <, > and &.
var plainStringStops, htmlStringStops = func() (plain, html [256]bool) {
	for c := range 256 {
		plain[c] = c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf
		html[c] = plain[c] || c == '<' || c == '>' || c == '&'
	}
	return plain, html
}()

// appendPayload appends a payload (any JSON value) the way encoding/json renders a
// json.RawMessage inside json.Marshal; see jsonscan.AppendCompact.
func appendPayload(dst, p []byte) ([]byte, bool) { return jsonscan.AppendCompact(dst, p) }
