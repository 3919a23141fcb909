package daemon_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestParkedLongPollsGauge: queen_proxy_parked_longpolls counts a pop while it waits at
// the broker, not only while its answer is relayed.
func TestParkedLongPollsGauge(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	createTenant(t, b.proxy, tenantSpec{ID: "acme"})
	k := createKey(t, b.proxy, "acme", "write")
	done := make(chan int, 1) // the pop's status, 0 when it failed
	go func() {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet,
			b.proxy.URL+"/api/v1/pop/queue/parked?wait=true&timeout=30000", nil)
		if err != nil {
			done <- 0
			return
		}
		req.Header.Set("Authorization", "Bearer "+k.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	eventually(t, 10*time.Second, func() bool {
		return strings.Contains(scrapeProxyMetrics(t, b.proxy), "\nqueen_proxy_parked_longpolls 1\n")
	}, "the parked pop is not counted")
	r := call(t, http.MethodPost, b.proxy.URL+"/api/v1/push", k.Key, pushBody("parked", 1, nil))
	if r.status != http.StatusCreated {
		t.Fatalf("push: %d %s", r.status, r.body)
	}
	if got := <-done; got != http.StatusOK {
		t.Fatalf("the parked pop answered %d", got)
	}
	eventually(t, 10*time.Second, func() bool {
		return strings.Contains(scrapeProxyMetrics(t, b.proxy), "\nqueen_proxy_parked_longpolls 0\n")
	}, "the answered pop is still counted")
}
