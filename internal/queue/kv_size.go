package queue

import (
	"unicode/utf16"
	"unicode/utf8"
)

// kvSerializedLen is the length of a compact JSON value as a JSON serializer writes
// it: strings hold every character as UTF-8 and escape only the quote, the backslash
// and the control characters (\b, \f, \n, \r and \t, the others as \u00XX), whatever
// escapes the sender wrote. A client whose JSON library escapes everything beyond
// ASCII (Python's json.dumps does by default) sends a value up to six times the size
// of the same value from one that does not; the size limit counts them alike. compact
// must be valid compact JSON (json.Compact's output): numbers, literals and the
// structure count as written.
func kvSerializedLen(compact []byte) int {
	n := 0
	for i := 0; i < len(compact); i++ {
		if compact[i] != '"' {
			n++
			continue
		}
		n++ // the opening quote
		for i++; compact[i] != '"'; i++ {
			if compact[i] != '\\' {
				n++
				continue
			}
			i++
			switch compact[i] {
			case 'u':
				r := hexRune(compact[i+1 : i+5])
				i += 4
				if utf16.IsSurrogate(r) && i+6 < len(compact) && compact[i+1] == '\\' && compact[i+2] == 'u' {
					if pair := utf16.DecodeRune(r, hexRune(compact[i+3:i+7])); pair != utf8.RuneError {
						r = pair
						i += 6
					}
				}
				n += escapedRuneLen(r)
			case '/':
				n++
			default: // \" \\ \b \f \n \r \t
				n += 2
			}
		}
		n++ // the closing quote
	}
	return n
}

// escapedRuneLen is the length of r inside a serialized JSON string.
func escapedRuneLen(r rune) int {
	switch {
	case r == '"' || r == '\\' || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20:
		return 6
	case utf16.IsSurrogate(r): // a lone surrogate decodes to U+FFFD
		return utf8.RuneLen(utf8.RuneError)
	}
	return utf8.RuneLen(r)
}

// hexRune reads four hex digits (valid in compact JSON).
func hexRune(h []byte) rune {
	var r rune
	for _, c := range h {
		v, _ := hexValue(c)
		r = r<<4 | rune(v)
	}
	return r
}
