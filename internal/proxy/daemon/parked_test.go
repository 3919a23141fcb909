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
	done := make(chan reply, 1)
	go func() {
		done <- call(t, http.MethodGet, b.proxy.URL+"/api/v1/pop/queue/parked?wait=true&timeout=30000", k.Key, nil)
	}()
	eventually(t, 10*time.Second, func() bool {
		return strings.Contains(scrapeProxyMetrics(t, b.proxy), "\nqueen_proxy_parked_longpolls 1\n")
	}, "the parked pop is not counted")
	r := call(t, http.MethodPost, b.proxy.URL+"/api/v1/push", k.Key, pushBody("parked", 1, nil))
	if r.status != http.StatusCreated {
		t.Fatalf("push: %d %s", r.status, r.body)
	}
	if got := <-done; got.status != http.StatusOK {
		t.Fatalf("the parked pop answered %d %s", got.status, got.body)
	}
	eventually(t, 10*time.Second, func() bool {
		return strings.Contains(scrapeProxyMetrics(t, b.proxy), "\nqueen_proxy_parked_longpolls 0\n")
	}, "the answered pop is still counted")
}
