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
	var b [16]byte
	if _, err := rand.Read(b[6:]); err != nil {
		panic("queue: crypto/rand failed: " + err.Error())
	}
	ms := g.nowFunc().UnixMilli()

	g.mu.Lock()
	switch {
	case ms > g.lastMS:
		g.lastMS, g.counter = ms, 0
	case g.counter < 0x0fff:
		g.counter++
	default:
		g.lastMS++
		g.counter = 0
	}
	ms, counter := g.lastMS, g.counter
	g.mu.Unlock()

	b[0], b[1], b[2] = byte(ms>>40), byte(ms>>32), byte(ms>>24)
	b[3], b[4], b[5] = byte(ms>>16), byte(ms>>8), byte(ms)
	b[6] = 0x70 | byte(counter>>8)
	b[7] = byte(counter)
	b[8] = 0x80 | (b[8] & 0x3f)
	return formatUUID(b)
}

func formatUUID(b [16]byte) string {
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
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
