package broker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTimerBackoff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		attempts int
		want     time.Duration
	}{
		{"First", 1, 2 * time.Second},
		{"Second", 2, 4 * time.Second},
		{"Fourth", 4, 16 * time.Second},
		{"Fifth", 5, 32 * time.Second},
		{"CappedAtSixty", 6, time.Minute},
		{"NeverOverflows", 80, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, timerBackoff(tc.attempts))
		})
	}
}
