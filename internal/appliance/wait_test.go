package appliance

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	errAway  = errors.New("database away")
	errFatal = errors.New("refused for good")
)

func TestWaitForDatabase(t *testing.T) {
	t.Parallel()
	away := func(err error) bool { return errors.Is(err, errAway) }
	b := Backoff{First: 100 * time.Millisecond, Max: 250 * time.Millisecond}

	t.Run("RetriesWhileAwayWithACappedBackoff", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			tries := 0
			var delays []time.Duration
			n, err := WaitForDatabase(t.Context(), b, func(context.Context) error {
				if tries++; tries < 5 {
					return errAway
				}
				return nil
			}, away, func(attempt int, retryIn time.Duration, err error) {
				require.Equal(t, len(delays)+1, attempt)
				require.ErrorIs(t, err, errAway)
				delays = append(delays, retryIn)
			})
			require.NoError(t, err)
			require.Equal(t, 5, n)
			require.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond,
				250 * time.Millisecond}, delays)
			require.Equal(t, 800*time.Millisecond, time.Since(start), "the attempts waited exactly the delays")
		})
	})
	t.Run("StopsAtAnErrorThatIsNotAnOutage", func(t *testing.T) {
		t.Parallel()
		n, err := WaitForDatabase(t.Context(), b, func(context.Context) error { return errFatal }, away,
			func(int, time.Duration, error) { t.Error("waited on an error that retrying cannot fix") })
		require.ErrorIs(t, err, errFatal)
		require.Equal(t, 1, n)
	})
	t.Run("StopsWhenTheContextEnds", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			_, err := WaitForDatabase(ctx, b, func(context.Context) error { return errAway }, away,
				func(attempt int, _ time.Duration, _ error) {
					if attempt == 3 {
						cancel()
					}
				})
			require.ErrorIs(t, err, context.Canceled)
		})
	})
}
