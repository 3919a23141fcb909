package testclock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := New(start)
	require.Equal(t, start, c.Now())
	c.Advance(time.Minute)
	require.Equal(t, start.Add(time.Minute), c.Now())
	c.Set(start)
	require.Equal(t, start, c.Now())
}
