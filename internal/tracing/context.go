package tracing

import "net/http"

// MaxTracestateBytes bounds a stored tracestate: the W3C limit of 32 list members
// fits in it; a longer header is not stored (the traceparent still is).
const MaxTracestateBytes = 512

// Incoming returns the W3C trace context of a request's headers: its traceparent if it
// is well-formed, and then its tracestate if that is at most MaxTracestateBytes. An
// absent, repeated or malformed traceparent yields "", "" (the W3C rule: such a header
// is ignored). It allocates nothing: the strings are the header values themselves.
func Incoming(h http.Header) (traceparent, tracestate string) {
	parents := h["Traceparent"]
	if len(parents) != 1 || !ValidTraceparent(parents[0]) {
		return "", ""
	}
	if states := h["Tracestate"]; len(states) == 1 && len(states[0]) <= MaxTracestateBytes && printable(states[0]) {
		tracestate = states[0]
	}
	return parents[0], tracestate
}

// ValidTraceparent reports whether s is a W3C traceparent: version-traceid-parentid-flags
// in lowercase hex (2-32-16-2 digits), a trace id and parent id not all zeros, version
// not ff; a version above 00 may carry more fields after a '-'.
func ValidTraceparent(s string) bool {
	if len(s) < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return false
	}
	if !lowerHex(s[0:2]) || s[0:2] == "ff" || !lowerHex(s[3:35]) || !lowerHex(s[36:52]) || !lowerHex(s[53:55]) {
		return false
	}
	if allZero(s[3:35]) || allZero(s[36:52]) {
		return false
	}
	if s[0:2] == "00" {
		return len(s) == 55
	}
	return len(s) == 55 || s[55] == '-'
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func allZero(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}

// printable reports whether s holds only printable ASCII (what a tracestate may hold).
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
