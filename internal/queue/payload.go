package queue

import "unicode/utf8"

// CheckPayload rejects JSON that PostgreSQL's jsonb cannot store, so one bad item is
// refused up front instead of failing its whole batch inside SQL: invalid UTF-8 and
// the escape \u0000 inside a string.
func CheckPayload(field string, payload []byte) error {
	if !utf8.Valid(payload) {
		return Invalid(field, "%s must be valid UTF-8", field)
	}
	if hasNULEscape(payload) {
		return Invalid(field, `%s must not contain the escape \u0000 (PostgreSQL jsonb cannot store it)`, field)
	}
	return nil
}

// hasNULEscape reports whether b contains \u0000 as an escape, that is preceded by an
// odd number of backslashes (`\\u0000` is a literal backslash followed by "u0000").
func hasNULEscape(b []byte) bool {
	const esc = `u0000`
	for i := 0; i+len(esc) < len(b)+1; i++ {
		if b[i] != '\\' {
			continue
		}
		run := 0
		for i < len(b) && b[i] == '\\' {
			run++
			i++
		}
		if run%2 == 1 && i+len(esc) <= len(b) && string(b[i:i+len(esc)]) == esc {
			return true
		}
		i--
	}
	return false
}
