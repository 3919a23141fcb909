package testwait

import (
	"testing"
	"time"
)

// For calls check at once and then every every until it returns nil, and fails the
// test with check's last error if it has not returned nil within timeout. check runs
// on the test's goroutine, so it may use require and t.Fatal.
func For(t testing.TB, timeout, every time.Duration, check func() error) {
	t.Helper()
	if err := Until(timeout, every, check); err != nil {
		t.Fatalf("testwait: not done within %s: %v", timeout, err)
	}
}

// Until calls check at once and then every every until it returns nil or timeout has
// passed, and returns check's last error (nil when it succeeded). It is For for a
// caller that reports the failure itself.
func Until(timeout, every time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		err := check()
		if err == nil || !time.Now().Before(deadline) {
			return err
		}
		<-tick.C
	}
}
