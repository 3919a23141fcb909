package httpapi

import (
	"unicode/utf16"
	"unicode/utf8"
)

// scanner is the single-pass JSON reader behind the fast decoders of the hot routes
// (push, ack, ack batch). It handles the happy path only: whenever it meets something
// it does not handle, or anything invalid, it gives up (ok false) and the caller runs
// the encoding/json path on the same bytes, which then decides, with its exact error
// messages. So the one rule for this file: never accept a document encoding/json
// rejects, and never read a value differently from it. The fuzz tests in
// scan_test.go check both.
//
// In compacting mode (appendPayload) the scanner also copies the document to out as
// encoding/json renders a json.RawMessage inside json.Marshal: without whitespace
// outside strings, and with <, >, &, U+2028 and U+2029 escaped inside them.
type scanner struct {
	b []byte
	i int

	compact bool
	out     []byte // compacting mode: the output so far
	copied  int    // compacting mode: b[:copied] is accounted for in out
}

// maxScanDepth bounds the nesting the scanner follows. Deeper documents go to the
// slow path (encoding/json itself refuses beyond 10000).
const maxScanDepth = 512

// scanned is the last value a key had in the object being scanned (encoding/json into
// a map keeps the last occurrence of a key).
type scanned struct {
	kind       scannedKind
	start, end int  // the value's bytes; for a string, its content between the quotes
	escaped    bool // the string content has a backslash
}

// scannedKind says what a scanned value is. JSON null is scanAbsent, as everywhere in
// this package (see presence).
type scannedKind uint8

const (
	scanAbsent scannedKind = iota // missing or null
	scanString
	scanOther // any other JSON value
)

// ws skips JSON whitespace (dropping it from the output when compacting).
func (s *scanner) ws() {
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
			continue
		}
		break
	}
	if s.compact && s.i > start {
		s.drop(start, s.i)
	}
}

// drop leaves b[start:end] out of the output (compacting mode).
func (s *scanner) drop(start, end int) {
	s.out = append(s.out, s.b[s.copied:start]...)
	s.copied = end
}

// replace writes esc instead of b[start:end] to the output (compacting mode).
func (s *scanner) replace(start, end int, esc ...byte) {
	s.drop(start, end)
	s.out = append(s.out, esc...)
}

// next skips whitespace and consumes c if it comes next.
func (s *scanner) next(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// peek skips whitespace and returns the next byte, 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// end reports whether only whitespace is left.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// str consumes the string at s.i and returns its content span and whether the content
// has escapes. Control characters and malformed escapes are refused; bytes >= 0x80 are
// not checked here (encoding/json accepts invalid UTF-8 in a document).
func (s *scanner) str() (start, end int, escaped, ok bool) {
	b, i := s.b, s.i
	if i >= len(b) || b[i] != '"' {
		return 0, 0, false, false
	}
	i++
	start = i
	stops, kind := &stringStops, runScanString
	if s.compact {
		stops, kind = &compactStringStops, runStringHTML
	}
	for {
		if i = indexStop(b, i, stops, kind); i == len(b) {
			return 0, 0, false, false
		}
		c := b[i]
		switch {
		case c == '"':
			s.i = i + 1
			return start, i, escaped, true
		case c < 0x20:
			return 0, 0, false, false
		case c == '<' || c == '>' || c == '&':
			s.replace(i, i+1, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			i++
			continue
		case c == 0xE2:
			if i+2 < len(b) && b[i+1] == 0x80 && b[i+2]&^1 == 0xA8 {
				s.replace(i, i+3, '\\', 'u', '2', '0', '2', hexDigits[b[i+2]&0xF])
				i += 3
			} else {
				i++
			}
			continue
		}
		// A backslash.
		escaped = true
		if i+1 >= len(b) {
			return 0, 0, false, false
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(b) || hex4(b[i+2:i+6]) < 0 {
				return 0, 0, false, false
			}
			i += 6
		default:
			return 0, 0, false, false
		}
	}
}

// stringStops marks the bytes that end a plain run inside a JSON string: the quote,
// the backslash and the control characters; compactStringStops adds the bytes the
// compacting mode escapes: <, >, & and 0xE2 (which starts U+2028 and U+2029).
var stringStops, compactStringStops = func() (plain, compact [256]bool) {
	for c := range 0x20 {
		plain[c] = true
	}
	plain['"'], plain['\\'] = true, true
	compact = plain
	compact['<'], compact['>'], compact['&'], compact[0xE2] = true, true, true, true
	return plain, compact
}()

// literal consumes lit (true, false, null) at s.i.
func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// number consumes a JSON number at s.i (RFC 8259 grammar, as encoding/json).
func (s *scanner) number() bool {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return false
		}
		i = j
	}
	s.i = i
	return true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// skip consumes any one JSON value, validating it.
func (s *scanner) skip(depth int) bool {
	switch s.peek() {
	case '"':
		_, _, _, ok := s.str()
		return ok
	case '{':
		if depth >= maxScanDepth {
			return false
		}
		return s.members(func(int, int) bool { return s.skip(depth + 1) })
	case '[':
		if depth >= maxScanDepth {
			return false
		}
		return s.elements(func() bool { return s.skip(depth + 1) })
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	return s.number()
}

// members consumes the object at s.i, calling value for each member with the key's
// raw content span; value must consume the member's value. A key with escapes is not
// handled (the keys that matter are plain ASCII; an escaped spelling of one would need
// unescaping to compare).
func (s *scanner) members(value func(start, end int) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		s.ws()
		start, end, escaped, ok := s.str()
		if !ok || escaped || !s.next(':') || !value(start, end) {
			return false
		}
		if s.next(',') {
			continue
		}
		return s.next('}')
	}
}

// elements consumes the array at s.i, calling value for each element; value must
// consume it.
func (s *scanner) elements(value func() bool) bool {
	if !s.next('[') {
		return false
	}
	if s.next(']') {
		return true
	}
	for {
		if !value() {
			return false
		}
		if s.next(',') {
			continue
		}
		return s.next(']')
	}
}

// key returns the raw key at span; compare it with string(...) == "name", which does
// not allocate.
func (s *scanner) key(start, end int) []byte { return s.b[start:end] }

// value consumes one value into v: strings and null are told apart, anything else is
// scanOther with its raw span.
func (s *scanner) value(v *scanned) bool {
	switch s.peek() {
	case '"':
		start, end, escaped, ok := s.str()
		*v = scanned{kind: scanString, start: start, end: end, escaped: escaped}
		return ok
	case 'n':
		*v = scanned{}
		return s.literal("null")
	}
	start := s.i
	if !s.skip(1) {
		return false
	}
	*v = scanned{kind: scanOther, start: start, end: s.i}
	return true
}

// raw returns the bytes of a present value (a string with its quotes), capped so an
// append by a later owner cannot write into the rest of the body.
func (s *scanner) raw(v scanned) []byte {
	start, end := v.start, v.end
	if v.kind == scanString {
		start, end = start-1, end+1
	}
	return s.b[start:end:end]
}

// text returns the string value v as encoding/json would unmarshal it, with ok false
// when v is not a string or holds something this scanner leaves to encoding/json
// (invalid UTF-8, lone surrogates). prev is returned instead of a new string when it
// has the same content, so items naming the same queue share one string.
func (s *scanner) text(v scanned, prev string) (string, bool) {
	if v.kind != scanString {
		return "", false
	}
	b := s.b[v.start:v.end]
	if !v.escaped {
		if string(b) == prev {
			return prev, true
		}
		if !asciiOrValid(b) {
			return "", false
		}
		return string(b), true
	}
	return unescape(b)
}

// asciiOrValid reports whether b is valid UTF-8, checking the common all-ASCII case
// first.
func asciiOrValid(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return utf8.Valid(b)
		}
	}
	return true
}

// unescape decodes string content with escapes that str has validated. Invalid UTF-8
// and surrogates other than a valid pair are left to encoding/json (which substitutes
// U+FFFD).
func unescape(b []byte) (string, bool) {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		if c != '\\' {
			if c >= utf8.RuneSelf {
				r, n := utf8.DecodeRune(b[i:])
				if r == utf8.RuneError && n == 1 {
					return "", false
				}
				out = append(out, b[i:i+n]...)
				i += n
				continue
			}
			out = append(out, c)
			i++
			continue
		}
		switch b[i+1] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := rune(hex4(b[i+2 : i+6]))
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
					return "", false
				}
				r = utf16.DecodeRune(r, rune(hex4(b[i+2:i+6])))
				if r == utf8.RuneError {
					return "", false
				}
				i += 6
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // '"', '\\', '/'
			out = append(out, b[i+1])
		}
		i += 2
	}
	return string(out), true
}

// hex4 decodes four hex digits, -1 when b is not exactly that.
func hex4(b []byte) int {
	if len(b) != 4 {
		return -1
	}
	n := 0
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		n = n<<4 | int(c)
	}
	return n
}
