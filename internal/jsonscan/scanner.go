package jsonscan

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Scanner is a single-pass JSON reader for the fast decoders of hot bodies. It handles
// the happy path only: whenever it meets something it does not handle, or anything
// invalid, it gives up (ok false) and the caller runs its encoding/json path on the
// same bytes, which then decides, with its exact error messages. So the one rule for
// this package: never accept a document encoding/json rejects, and never read a value
// differently from it. Every decoder built on it has a fuzz test against its
// encoding/json twin.
//
// In compacting mode (AppendCompact) the scanner also copies the document to out as
// encoding/json renders a json.RawMessage inside json.Marshal: without whitespace
// outside strings, and with <, >, &, U+2028 and U+2029 escaped inside them.
type Scanner struct {
	b []byte
	i int

	compact bool
	out     []byte // compacting mode: the output so far
	copied  int    // compacting mode: b[:copied] is accounted for in out
}

// MaxDepth bounds the nesting the scanner follows. Deeper documents go to the slow
// path (encoding/json itself refuses beyond 10000).
const MaxDepth = 512

// hexDigits are the digits of \u escapes.
const hexDigits = "0123456789abcdef"

// Value is a value Scanner.Value consumed: its kind and where its bytes are.
type Value struct {
	Kind       Kind
	start, end int  // the value's bytes; for a string, its content between the quotes
	escaped    bool // the string content has a backslash
}

// Kind says what a Value is. JSON null is Absent, like a missing key.
type Kind uint8

// The kinds of a Value.
const (
	Absent Kind = iota // missing or null
	String
	Other // any other JSON value
)

// New returns a scanner at the start of b.
func New(b []byte) Scanner { return Scanner{b: b} }

// AppendCompact appends p (any JSON value) the way encoding/json renders a
// json.RawMessage inside json.Marshal (which escapes HTML): compacted, with <, >, &,
// U+2028 and U+2029 escaped in strings. ok is false when p is not valid JSON (or nests
// deeper than the scanner follows), where encoding/json fails or must decide; dst is
// then unusable.
func AppendCompact(dst, p []byte) ([]byte, bool) {
	s := Scanner{b: p, compact: true, out: dst}
	if !s.Skip(0) || !s.End() {
		return dst, false
	}
	return append(s.out, p[s.copied:]...), true
}

// ws skips JSON whitespace (dropping it from the output when compacting).
func (s *Scanner) ws() {
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
func (s *Scanner) drop(start, end int) {
	s.out = append(s.out, s.b[s.copied:start]...)
	s.copied = end
}

// replace writes esc instead of b[start:end] to the output (compacting mode).
func (s *Scanner) replace(start, end int, esc ...byte) {
	s.drop(start, end)
	s.out = append(s.out, esc...)
}

// next skips whitespace and consumes c if it comes next.
func (s *Scanner) next(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// Peek skips whitespace and returns the next byte, 0 at the end.
func (s *Scanner) Peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// End reports whether only whitespace is left.
func (s *Scanner) End() bool {
	s.ws()
	return s.i == len(s.b)
}

// str consumes the string at s.i and returns its content span and whether the content
// has escapes. Control characters and malformed escapes are refused; bytes >= 0x80 are
// not checked here (encoding/json accepts invalid UTF-8 in a document).
func (s *Scanner) str() (start, end int, escaped, ok bool) {
	b, i := s.b, s.i
	if i >= len(b) || b[i] != '"' {
		return 0, 0, false, false
	}
	i++
	start = i
	stops, kind := &stringStops, runScanString
	if s.compact {
		stops, kind = &compactStringStops, RunStringHTML
	}
	for {
		if i = IndexStop(b, i, stops, kind); i == len(b) {
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

// Literal consumes lit (true, false, null) at s.i.
func (s *Scanner) Literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// number consumes a JSON number at s.i (RFC 8259 grammar, as encoding/json).
func (s *Scanner) number() bool {
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

// Skip consumes any one JSON value, validating it.
func (s *Scanner) Skip(depth int) bool {
	switch s.Peek() {
	case '"':
		_, _, _, ok := s.str()
		return ok
	case '{':
		if depth >= MaxDepth {
			return false
		}
		return s.members(true, func([]byte) bool { return s.Skip(depth + 1) })
	case '[':
		if depth >= MaxDepth {
			return false
		}
		return s.Elements(func() bool { return s.Skip(depth + 1) })
	case 't':
		return s.Literal("true")
	case 'f':
		return s.Literal("false")
	case 'n':
		return s.Literal("null")
	}
	return s.number()
}

// Members consumes the object at the scanner, calling value for each member with its
// raw key; value must consume the member's value. A key with escapes is not handled
// (the keys that matter are plain ASCII; an escaped spelling of one would need
// unescaping to compare). Compare the key with string(key) == "name", which does not
// allocate.
func (s *Scanner) Members(value func(key []byte) bool) bool { return s.members(false, value) }

// members is Members; with anyKey it also takes keys with escapes (Skip, which compares
// no key, passes their raw content).
func (s *Scanner) members(anyKey bool, value func(key []byte) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		s.ws()
		start, end, escaped, ok := s.str()
		if !ok || (escaped && !anyKey) || !s.next(':') || !value(s.b[start:end]) {
			return false
		}
		if s.next(',') {
			continue
		}
		return s.next('}')
	}
}

// Elements consumes the array at the scanner, calling value for each element; value must
// consume it.
func (s *Scanner) Elements(value func() bool) bool {
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

// Value consumes one value into v: strings and null are told apart, anything else is
// Other with its raw span.
func (s *Scanner) Value(v *Value) bool {
	switch s.Peek() {
	case '"':
		start, end, escaped, ok := s.str()
		*v = Value{Kind: String, start: start, end: end, escaped: escaped}
		return ok
	case 'n':
		*v = Value{}
		return s.Literal("null")
	}
	start := s.i
	if !s.Skip(1) {
		return false
	}
	*v = Value{Kind: Other, start: start, end: s.i}
	return true
}

// Raw returns the bytes of a present value (a string with its quotes), capped so an
// append by a later owner cannot write into the rest of the body.
func (s *Scanner) Raw(v Value) []byte {
	start, end := v.start, v.end
	if v.Kind == String {
		start, end = start-1, end+1
	}
	return s.b[start:end:end]
}

// Text returns the string value v as encoding/json would unmarshal it, with ok false
// when v is not a string or holds something this scanner leaves to encoding/json
// (invalid UTF-8, lone surrogates). prev is returned instead of a new string when it
// has the same content, so items naming the same queue share one string.
func (s *Scanner) Text(v Value, prev string) (string, bool) {
	if v.Kind != String {
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

// Plain returns the content of a string value without escapes, still in the
// document's bytes (compare it with string(b) == "lit", which does not allocate); ok
// is false for any other value and for a string with escapes (use Text).
func (s *Scanner) Plain(v Value) (b []byte, ok bool) {
	if v.Kind != String || v.escaped {
		return nil, false
	}
	return s.b[v.start:v.end], true
}

// OptText is Text for an optional string: absent or null is "".
func (s *Scanner) OptText(v Value, prev string) (string, bool) {
	if v.Kind == Absent {
		return "", true
	}
	return s.Text(v, prev)
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
