package daemon_test

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// Two replicas share a tenant's limit by demand: whether the load arrives at one of
// them or at both, the cluster admits the limit ± 20 % per second once the shares
// have followed it (3 s). The second replica is a process of its own, so the shares
// travel through the proxy database only. It measures rates, so it does not run in
// parallel with the package's other tests.
func TestTwoReplicasShareLimits(t *testing.T) {
	env := []string{"QUEEN_PROXY_LIMITER_SYNC_INTERVAL=200ms"}
	b := setup(t, setupOpts{env: env})
	a := b.proxy
	other := proxytest.Exec(t, proxytest.Options{DBURL: a.DBURL, Backends: []string{b.broker.URL}, Env: env})
	other.WaitBackends(t, "up", 10*time.Second)
	eventually(t, 10*time.Second, func() bool {
		var rs struct {
			Replicas []any `json:"replicas"`
		}
		a.Admin(t, http.MethodGet, "/admin/v1/replicas", nil, &rs)
		return len(rs.Replicas) == 2
	}, "the replicas do not see each other")
	eventually(t, 10*time.Second, func() bool {
		return strings.Contains(scrapeProxyMetrics(t, a), "\nqueen_proxy_replicas_live 2\n")
	}, "queen_proxy_replicas_live does not count both replicas")
	createTenant(t, a, tenantSpec{ID: "acme", Limits: map[string]any{"requestsPerSecond": 100, "requestsBurst": 10,
		"maxConcurrent": 0}})
	k := createKey(t, a, "acme", "read")

	// load sends rate requests per second, spread over targets, for d, and returns
	// the admitted and the answered count of each whole second (by sending time).
	load := func(targets []string, rate int, d time.Duration) ([]int64, []int64) {
		secs := make([]atomic.Int64, int(d/time.Second))
		answered := make([]atomic.Int64, len(secs))
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		start := time.Now()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 256)
		for i := 0; time.Since(start) < d; i++ {
			<-tick.C
			sent := time.Since(start)
			target := targets[i%len(targets)]
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				r := call(t, http.MethodGet, target+"/api/v1/resources/queues", k.Key, nil)
				s := int(sent / time.Second)
				if s < len(secs) {
					answered[s].Add(1)
					if r.status == http.StatusOK {
						secs[s].Add(1)
					}
				}
			})
		}
		wg.Wait()
		out, offered := make([]int64, len(secs)), make([]int64, len(secs))
		for i := range secs {
			out[i], offered[i] = secs[i].Load(), answered[i].Load()
		}
		return out, offered
	}
	// check holds the cluster to the limit + 20 % every second after the third, and
	// to the limit − 20 % in the seconds where the load generator managed to offer
	// twice the limit (a loaded test machine may not).
	check := func(phase string, secs, offered []int64) {
		t.Logf("%s: admitted per second %v of %v answered", phase, secs, offered)
		measured := 0
		for i := 3; i < len(secs); i++ {
			require.LessOrEqual(t, secs[i], int64(120), "%s, second %d: %v", phase, i, secs)
			if offered[i] >= 200 {
				measured++
				require.GreaterOrEqual(t, secs[i], int64(80), "%s, second %d: %v of %v", phase, i, secs, offered)
			}
		}
		if measured == 0 {
			t.Logf("%s: the machine never offered 200 requests in a second; only the upper bound was checked", phase)
		}
	}
	secs, offered := load([]string{a.URL}, 300, 5*time.Second)
	check("all via A", secs, offered)
	secs, offered = load([]string{a.URL, other.URL}, 300, 6*time.Second)
	check("split", secs, offered)
}
