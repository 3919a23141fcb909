package queue

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

// IDGenerator makes UUIDv7 ids that strictly increase within one process: 48-bit
// Unix milliseconds, a 12-bit counter for ids made in the same millisecond, and
// random bits. When the counter would overflow, or the clock
// goes backwards, the generator moves its own millisecond forward instead of wrapping.
type IDGenerator struct {
	nowFunc func() time.Time

	mu      sync.Mutex
	lastMS  int64
	counter uint16
}

// NewIDGenerator returns a generator reading the wall clock.
func NewIDGenerator() *IDGenerator {
	return &IDGenerator{nowFunc: time.Now}
}

// New returns the next id in canonical text form.
func (g *IDGenerator) New() string {
	var random [8]byte
	if _, err := rand.Read(random[:]); err != nil {
		panic("queue: crypto/rand failed: " + err.Error())
	}
	ms, counter := g.reserve(1)
	var out [36]byte
	putUUID(out[:], ms, counter, random[:])
	return string(out[:])
}

// Append appends n new ids to dst, in increasing order, as n calls of New would
// make them; for all of them it reads the clock once, takes the lock once, reads
// random bytes once, and allocates one string that the ids share.
func (g *IDGenerator) Append(dst []string, n int) []string {
	if n <= 0 {
		return dst
	}
	random := make([]byte, 8*n)
	if _, err := rand.Read(random); err != nil {
		panic("queue: crypto/rand failed: " + err.Error())
	}
	ms, counter := g.reserve(n)
	text := make([]byte, 36*n)
	for i := range n {
		putUUID(text[36*i:36*i+36], ms, counter, random[8*i:8*i+8])
		if counter++; counter > maxCounter {
			ms, counter = ms+1, 0
		}
	}
	all := string(text)
	for i := range n {
		dst = append(dst, all[36*i:36*i+36])
	}
	return dst
}

// maxCounter is the last value of the 12-bit counter within one millisecond.
const maxCounter = 0x0fff

// reserve takes n consecutive (millisecond, counter) stamps and returns the first:
// the next ones follow with the counter counting up to maxCounter, then the next
// millisecond from 0.
func (g *IDGenerator) reserve(n int) (int64, uint16) {
	ms := g.nowFunc().UnixMilli()
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case ms > g.lastMS:
		g.lastMS, g.counter = ms, 0
	case g.counter < maxCounter:
		g.counter++
	default:
		g.lastMS++
		g.counter = 0
	}
	first, counter := g.lastMS, g.counter
	last := int64(g.counter) + int64(n-1)
	g.lastMS += last / (maxCounter + 1)
	g.counter = uint16(last % (maxCounter + 1))
	return first, counter
}

// putUUID writes the version-7 UUID of (ms, counter) and 8 random bytes (of which
// the variant takes 2 bits) in canonical text form into dst[:36].
func putUUID(dst []byte, ms int64, counter uint16, random []byte) {
	var b [16]byte
	b[0], b[1], b[2] = byte(ms>>40), byte(ms>>32), byte(ms>>24)
	b[3], b[4], b[5] = byte(ms>>16), byte(ms>>8), byte(ms)
	b[6] = 0x70 | byte(counter>>8)
	b[7] = byte(counter)
	copy(b[8:], random)
	b[8] = 0x80 | (b[8] & 0x3f)
	encodeUUID(dst, b[:])
}

// encodeUUID writes the 16 bytes of b in canonical text form into dst[:36].
func encodeUUID(dst, b []byte) {
	hex.Encode(dst[0:8], b[0:4])
	dst[8] = '-'
	hex.Encode(dst[9:13], b[4:6])
	dst[13] = '-'
	hex.Encode(dst[14:18], b[6:8])
	dst[18] = '-'
	hex.Encode(dst[19:23], b[8:10])
	dst[23] = '-'
	hex.Encode(dst[24:36], b[10:])
}

// CanonicalUUID returns s in canonical lower-case 8-4-4-4-12 form when it is a UUID in
// any of the forms PostgreSQL's uuid type accepts: 32 hex digits in either case,
// optionally in braces, with a hyphen allowed after any group of four digits (the
// canonical form, and the bare 32 digits of an OpenTelemetry trace id, among them).
func CanonicalUUID(s string) (string, bool) {
	if len(s) >= 2 && s[0] == '{' && s[len(s)-1] == '}' {
		s = s[1 : len(s)-1]
	}
	var raw [16]byte
	n := 0 // hex digits read
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '-' {
			if n == 0 || n%4 != 0 || n == 32 || s[i-1] == '-' {
				return "", false
			}
			continue
		}
		v, ok := hexValue(c)
		if !ok || n == 32 {
			return "", false
		}
		raw[n/2] |= v << (4 * (1 - n%2))
		n++
	}
	if n != 32 {
		return "", false
	}
	dst := make([]byte, 36)
	encodeUUID(dst, raw[:])
	return string(dst), true
}

func hexValue(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// IsUUID reports whether s is a UUID in canonical 8-4-4-4-12 hex form.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
