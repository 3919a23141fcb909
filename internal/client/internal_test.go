package client

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackoffDelay(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		base    time.Duration
		attempt int
		want    time.Duration
	}{
		{"First", time.Second, 0, time.Second},
		{"Doubles", time.Second, 2, 4 * time.Second},
		{"Capped", time.Second, 10, maxBackoff},
		{"NoOverflow", time.Second, 200, maxBackoff},
		{"ZeroBaseStaysZero", 0, 3, 0},
		{"NegativeBaseIsZero", -time.Second, 1, 0},
		{"LargeBaseCapped", time.Hour, 0, maxBackoff},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, backoffDelay(tc.base, tc.attempt))
		})
	}
}

func TestNewUUIDv7(t *testing.T) {
	t.Parallel()

	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	before := time.Now().UnixMilli()
	for range 1000 {
		id := newUUIDv7()
		require.Regexp(t, re, id)
		require.False(t, seen[id], "duplicate %s", id)
		seen[id] = true
	}
	// The first 48 bits are the Unix time in milliseconds.
	id := newUUIDv7()
	var ms int64
	for _, c := range id[:8] + id[9:13] {
		ms = ms<<4 | int64(hexVal(c))
	}
	require.GreaterOrEqual(t, ms, before)
	require.LessOrEqual(t, ms, time.Now().UnixMilli())
}

func hexVal(c rune) int {
	if c >= 'a' {
		return int(c-'a') + 10
	}
	return int(c - '0')
}
