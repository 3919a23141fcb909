package queue

import "unicode/utf8"

// MaxPayloadDepth is how deep a stored document (a payload, a timer's payload, a KV
// value, a trace's data, a stream state value) may nest arrays and objects. Every
// answer that carries one puts it a few levels deeper, and Go's encoder refuses a
// document of more than 10 000 levels: a deeper one would be stored and then fail
// every read of it with a 500. PostgreSQL's jsonb itself stops somewhere above 10 000
// (its stack depth).
const MaxPayloadDepth = 9000

// CheckPayload rejects JSON that PostgreSQL's jsonb cannot store, or would store far
// larger than it was sent, so one bad item is refused up front instead of failing its
// whole batch inside SQL (or every later read): invalid UTF-8, the escape \u0000, and
// a UTF-16 surrogate escape that is not part of a pair (\ud800 alone), anywhere in the
// document, keys included; numbers beyond the limits of checkNumbers
// (payload_number.go); and arrays and objects nested deeper than MaxPayloadDepth.
// payload must be valid JSON.
func CheckPayload(field string, payload []byte) error {
	if !utf8.Valid(payload) {
		return Invalid(field, "%s must be valid UTF-8", field)
	}
	switch badEscape(payload) {
	case escapeNUL:
		return Invalid(field, `%s must not contain the escape \u0000 (PostgreSQL jsonb cannot store it)`, field)
	case escapeLoneSurrogate:
		return Invalid(field, `%s must not contain an unpaired surrogate escape such as \ud800 (PostgreSQL jsonb cannot store it)`, field)
	}
	return checkNumbers(field, payload)
}

// escapeProblem is what badEscape found.
type escapeProblem int

const (
	escapeOK escapeProblem = iota
	escapeNUL
	escapeLoneSurrogate
)

// badEscape scans the escapes of a JSON document for \u0000 and for surrogate escapes
// outside a high-low pair. Escapes are consumed left to right, so `\\u0000` (an
// escaped backslash followed by "u0000") is text, not an escape. Backslashes only
// occur inside strings in valid JSON, so the whole document can be scanned.
func badEscape(b []byte) escapeProblem {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		u, ok := hexEscape(b, i)
		if !ok {
			i++ // a one-character escape such as \\ or \"
			continue
		}
		switch {
		case u == 0:
			return escapeNUL
		case u >= 0xdc00 && u <= 0xdfff:
			return escapeLoneSurrogate // a low surrogate without its high half
		case u >= 0xd800 && u <= 0xdbff:
			low, ok := hexEscape(b, i+6)
			if !ok || low < 0xdc00 || low > 0xdfff {
				return escapeLoneSurrogate
			}
			i += 6
		}
		i += 5
	}
	return escapeOK
}

// hexEscape decodes the \uXXXX escape at b[i:], if there is one.
func hexEscape(b []byte, i int) (rune, bool) {
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	var u rune
	for _, c := range b[i+2 : i+6] {
		switch {
		case c >= '0' && c <= '9':
			u = u<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			u = u<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			u = u<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return u, true
}
