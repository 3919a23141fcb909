package testwait_test

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/testwait"
)

func TestUntilReturnsOnceTheCheckHolds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		start, calls := time.Now(), 0
		err := testwait.Until(time.Minute, time.Second, func() error {
			calls++
			if calls < 3 {
				return fmt.Errorf("call %d", calls)
			}
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, 3, calls)
		require.Equal(t, 2*time.Second, time.Since(start), "the first call at once, then one a second")
	})
}

func TestUntilReturnsTheLastErrorOnTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		start, calls := time.Now(), 0
		err := testwait.Until(10*time.Second, 3*time.Second, func() error {
			calls++
			return fmt.Errorf("call %d", calls)
		})
		require.EqualError(t, err, "call 5")
		require.Equal(t, 12*time.Second, time.Since(start), "checks at 0, 3, 6, 9 and 12 s, the last past the deadline")
	})
}

func TestForFailsWithTheLastError(t *testing.T) {
	t.Parallel()
	errStill := errors.New("still pending")
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			testwait.For(rec, time.Second, 100*time.Millisecond, func() error { return errStill })
		}()
		<-done
		require.True(t, rec.failed)
		require.Contains(t, rec.msg, errStill.Error())
	})
}

func TestForPassesWhenTheCheckHolds(t *testing.T) {
	t.Parallel()
	rec := &recorder{TB: t}
	testwait.For(rec, time.Second, time.Millisecond, func() error { return nil })
	require.False(t, rec.failed)
}

// recorder records a Fatalf instead of failing the test, and ends its goroutine as
// the real one does.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
