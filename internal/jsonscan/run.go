package jsonscan

// The scanner and JSON encoders spend most of their time walking string contents for
// the few bytes that need attention. IndexStop checks eight bytes at a time with
// SWAR ("SIMD within a register") arithmetic before it looks at single bytes.

// RunKind names the byte set a caller of IndexStop stops at; for each, the SWAR
// pre-check flags a superset of the bytes its stops table marks (flagging more only
// costs a byte-wise look). The quote and the backslash are in every set.
type RunKind uint8

// The byte sets of IndexStop.
const (
	runScanString RunKind = iota // control characters (Scanner.str)
	RunString                    // control characters and bytes >= 0x80 (a string encoder)
	RunStringHTML                // RunString plus <, > and & (also Scanner.str compacting)
)

const (
	swarOnes = 0x0101010101010101
	swarHigh = 0x8080808080808080
)

// IndexStop returns the index of the first byte at or after i that stops marks, or
// len(s).
func IndexStop[T string | []byte](s T, i int, stops *[256]bool, kind RunKind) int {
	for {
		for i+8 <= len(s) {
			x := load64(s, i)
			// Bytes below 0x20 (the subtraction borrows) or at or above 0x80; '"' and
			// '&' are 0x22 and 0x26, '<' and '>' 0x3c and 0x3e. The has-zero-byte
			// tricks are exact for "any byte": a borrow only flags bytes above one
			// that truly matches.
			var m uint64
			switch kind {
			case runScanString:
				m = (x-swarOnes*0x20)&^x&swarHigh | hasByte(x, '"')
			case RunString:
				m = ((x-swarOnes*0x20)|x)&swarHigh | hasByte(x, '"')
			case RunStringHTML:
				m = ((x-swarOnes*0x20)|x)&swarHigh | hasByte(x|swarOnes*0x04, 0x26) | hasByte(x|swarOnes*0x02, 0x3e)
			}
			m |= hasByte(x, '\\')
			if m != 0 {
				break
			}
			i += 8
		}
		for end := min(i+8, len(s)); i < end; i++ {
			if stops[s[i]] {
				return i
			}
		}
		if i == len(s) {
			return i
		}
	}
}

// hasByte is non-zero when some byte of x is c.
func hasByte(x uint64, c byte) uint64 {
	y := x ^ (swarOnes * uint64(c))
	return (y - swarOnes) &^ y & swarHigh
}

// load64 reads s[i:i+8] little-endian.
func load64[T string | []byte](s T, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}
