package gateway

import (
	"encoding/binary"
	"unicode/utf8"

	"github.com/queenmq/queen/internal/api"
)

// The scanners in this file read the two bodies the proxy handles on every push, the
// push request and the broker's answer, in a single pass and without allocating per
// item. encoding/json stays the reference: a scanner accepts only the common shape and
// reports ok=false on anything else (an escape in a key or in a string it keeps, a
// repeated key it uses, a null or a value of the wrong type where it reads one, a
// non-ASCII key, deep nesting, invalid JSON of any kind), and the caller then runs
// encoding/json, which owns every error message. Whenever a scanner says ok its result
// must equal the decoder's, and it must never accept a document the decoder rejects;
// scan_test.go fuzzes both against encoding/json.

// maxScanDepth bounds the nesting the scanners follow, far below encoding/json's own
// limit, so they never accept a document the decoder refuses as too deep.
const maxScanDepth = 256

// pushTally counts the results of a push answer by status.
type pushTally struct {
	// in counts queued and buffered items.
	in         int64
	duplicates int64
	failed     int64
}

// scanPush is the fast path of parse for a push body, {"items":[{...},...]}: the
// number of items, the summed length of their raw payloads and the distinct queue
// names in order of first appearance.
func scanPush(raw []byte) (parsedBody, bool) {
	var p parsedBody
	s := scanner{b: raw}
	seenItems := false
	more, ok := s.open('{', '}')
	for ok && more {
		var key []byte
		if key, ok = s.key(); !ok {
			break
		}
		switch {
		case string(key) == "items":
			if seenItems {
				return p, false
			}
			seenItems = true
			ok = s.items(&p)
		default:
			ok = s.skip(1)
		}
		if !ok {
			break
		}
		more, ok = s.after('}')
	}
	return p, ok && s.end()
}

// scanPushAnswer is the fast path of tallyPushAnswer for the broker's answer to a
// push, [{"status":"queued",...},...].
func scanPushAnswer(raw []byte) (pushTally, bool) {
	var t pushTally
	s := scanner{b: raw}
	more, ok := s.open('[', ']')
	for ok && more {
		if ok = s.result(&t); !ok {
			break
		}
		more, ok = s.after(']')
	}
	return t, ok && s.end()
}

// scanner walks a JSON document; i is the offset of the next unread byte.
type scanner struct {
	b []byte
	i int
}

// items reads the value of a push body's "items" key.
func (s *scanner) items(p *parsedBody) bool {
	if s.next() == 'n' {
		return s.literal("null")
	}
	more, ok := s.open('[', ']')
	for ok && more {
		if ok = s.item(p); !ok {
			break
		}
		more, ok = s.after(']')
	}
	return ok
}

// item reads one push item and adds it to p.
func (s *scanner) item(p *parsedBody) bool {
	var queue []byte
	payload := 0
	seenQueue, seenPayload := false, false
	more, ok := s.open('{', '}')
	for ok && more {
		var key []byte
		if key, ok = s.key(); !ok {
			return false
		}
		switch {
		case string(key) == "queue":
			if seenQueue || s.next() != '"' {
				return false
			}
			seenQueue = true
			var escaped bool
			queue, escaped, ok = s.str()
			// The decoder replaces invalid UTF-8, so only valid names are kept verbatim.
			ok = ok && !escaped && utf8.Valid(queue)
		case string(key) == "payload":
			if seenPayload {
				return false
			}
			seenPayload = true
			s.space()
			start := s.i
			ok = s.skip(3)
			payload = s.i - start
		default:
			ok = s.skip(3)
		}
		if !ok {
			return false
		}
		more, ok = s.after('}')
	}
	if !ok {
		return false
	}
	p.messages++
	p.payloadBytes += int64(payload)
	p.queues = appendNewBytes(p.queues, queue)
	return true
}

// result reads one element of a push answer and counts its status.
func (s *scanner) result(t *pushTally) bool {
	var status []byte
	seen := false
	more, ok := s.open('{', '}')
	for ok && more {
		var key []byte
		if key, ok = s.key(); !ok {
			return false
		}
		if foldEqual(key, "status") {
			if seen || s.next() != '"' {
				return false
			}
			seen = true
			var escaped bool
			status, escaped, ok = s.str()
			ok = ok && !escaped
		} else {
			ok = s.skip(2)
		}
		if !ok {
			return false
		}
		more, ok = s.after('}')
	}
	if !ok {
		return false
	}
	switch string(status) {
	case api.PushStatusQueued, api.PushStatusBuffered:
		t.in++
	case api.PushStatusDuplicate:
		t.duplicates++
	case api.PushStatusFailed:
		t.failed++
	}
	return true
}

// space skips JSON whitespace.
func (s *scanner) space() {
	for s.i < len(s.b) && s.b[s.i] <= ' ' {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips whitespace and returns the next byte without consuming it, 0 at the end.
func (s *scanner) next() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// end reports whether only whitespace is left.
func (s *scanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// open consumes the opening byte of a container and reports whether it has members;
// an empty container is consumed whole.
func (s *scanner) open(opening, closing byte) (more, ok bool) {
	if s.next() != opening {
		return false, false
	}
	s.i++
	if s.next() == closing {
		s.i++
		return false, true
	}
	return true, true
}

// after consumes what follows a member: a comma before another member, or the closing
// byte.
func (s *scanner) after(closing byte) (more, ok bool) {
	switch s.next() {
	case ',':
		s.i++
		return true, true
	case closing:
		s.i++
		return false, true
	}
	return false, false
}

// key reads an object key and its colon. Keys with escapes or non-ASCII bytes are
// refused: the push decoder compares keys after unescaping them, and the answer's
// decoder case-insensitively with Unicode folding, which foldEqual does not replicate.
func (s *scanner) key() ([]byte, bool) {
	if s.next() != '"' {
		return nil, false
	}
	key, escaped, ok := s.str()
	if !ok || escaped {
		return nil, false
	}
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return nil, false
		}
	}
	if s.next() != ':' {
		return nil, false
	}
	s.i++
	return key, true
}

// str reads the string starting at the quote under s.i and returns its raw contents,
// and whether they contain an escape.
func (s *scanner) str() (raw []byte, escaped, ok bool) {
	b := s.b
	start := s.i + 1
	i := start
	for {
		for i+8 <= len(b) && plainWord(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && b[i] >= 0x20 && b[i] != '"' && b[i] != '\\' {
			i++
		}
		switch {
		case i >= len(b):
			return nil, false, false
		case b[i] == '"':
			s.i = i + 1
			return b[start:i], escaped, true
		case b[i] == '\\':
			s.i = i
			if !s.escape() {
				return nil, false, false
			}
			escaped = true
			i = s.i
		default:
			return nil, false, false
		}
	}
}

// plainWord reports whether none of the 8 bytes in w ends or escapes a string or is a
// control byte, so a string scan may step over all of them at once.
func plainWord(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	control := (w - ones*0x20) &^ w
	quote := w ^ (ones * '"')
	backslash := w ^ (ones * '\\')
	quote = (quote - ones) &^ quote
	backslash = (backslash - ones) &^ backslash
	return (control|quote|backslash)&highs == 0
}

// escape consumes the escape sequence starting at the backslash under s.i.
func (s *scanner) escape() bool {
	if s.i+1 >= len(s.b) {
		return false
	}
	switch s.b[s.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i += 2
		return true
	case 'u':
		if s.i+6 > len(s.b) {
			return false
		}
		for _, h := range s.b[s.i+2 : s.i+6] {
			if !isHex(h) {
				return false
			}
		}
		s.i += 6
		return true
	}
	return false
}

// skip consumes any JSON value; depth is the nesting of the container holding it.
func (s *scanner) skip(depth int) bool {
	switch c := s.next(); {
	case c == '"':
		_, _, ok := s.str()
		return ok
	case c == '{' || c == '[':
		return s.skipContainer(depth + 1)
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || isDigit(c):
		return s.number()
	}
	return false
}

// skipContainer consumes the object or array opening under s.i.
func (s *scanner) skipContainer(depth int) bool {
	if depth > maxScanDepth {
		return false
	}
	opening := s.b[s.i]
	closing := byte(']')
	if opening == '{' {
		closing = '}'
	}
	more, ok := s.open(opening, closing)
	for ok && more {
		if opening == '{' {
			if s.next() != '"' {
				return false
			}
			if _, _, ok = s.str(); !ok || s.next() != ':' {
				return false
			}
			s.i++
		}
		if !s.skip(depth) {
			return false
		}
		more, ok = s.after(closing)
	}
	return ok
}

// literal consumes true, false or null.
func (s *scanner) literal(lit string) bool {
	end := s.i + len(lit)
	if end > len(s.b) || string(s.b[s.i:end]) != lit {
		return false
	}
	s.i = end
	return true
}

// number consumes a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?. What may
// follow it is checked by the caller, which expects a separator.
func (s *scanner) number() bool {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && isDigit(b[i]):
		i = digits(b, i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return false
		}
		i = digits(b, i)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return false
		}
		i = digits(b, i)
	}
	s.i = i
	return true
}

func digits(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// foldEqual reports whether an ASCII key equals lower, a lowercase field name, up to
// ASCII case, as the decoder matches keys to fields.
func foldEqual(key []byte, lower string) bool {
	if len(key) != len(lower) {
		return false
	}
	for i, c := range key {
		if c|0x20 != lower[i] {
			return false
		}
	}
	return true
}

// appendNewBytes is appendNew for a name still in the body's bytes; it allocates only
// for a name not seen yet.
func appendNewBytes(names []string, n []byte) []string {
	for _, have := range names {
		if have == string(n) {
			return names
		}
	}
	return append(names, string(n))
}
