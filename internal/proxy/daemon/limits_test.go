package daemon_test

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRateLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	p := b.proxy
	createTenant(t, p, tenantSpec{ID: "acme", Limits: map[string]any{"requestsPerSecond": 20, "requestsBurst": 20,
		"messagesPerSecond": 10, "messagesBurst": 10, "maxConcurrent": 2}})
	createTenant(t, p, tenantSpec{ID: "bob", Limits: map[string]any{"requestsPerSecond": 100, "requestsBurst": 100}})
	acme := createKey(t, p, "acme", "write")
	bob := createKey(t, p, "bob", "write")

	t.Run("RequestBucket", func(t *testing.T) {
		// 200 requests as fast as 10 workers go (well under a second): at most burst +
		// rate × elapsed pass.
		var passed, limited atomic.Int64
		var retryAfter atomic.Int64
		start := time.Now()
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				for range 20 {
					r := call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", acme.Key, nil)
					switch r.status {
					case http.StatusOK:
						passed.Add(1)
					case http.StatusTooManyRequests:
						limited.Add(1)
						n, _ := strconv.Atoi(r.header.Get("Retry-After"))
						retryAfter.Store(int64(n))
						if r.code(t) != "rate_limited" {
							t.Errorf("code %s", r.code(t))
						}
					}
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		t.Logf("%d passed, %d limited in %s", passed.Load(), limited.Load(), elapsed)
		require.LessOrEqual(t, float64(passed.Load()), 20+20*elapsed.Seconds()+2)
		require.EqualValues(t, 200, passed.Load()+limited.Load())
		require.GreaterOrEqual(t, retryAfter.Load(), int64(1))
		eventually(t, 2*time.Second, func() bool {
			return call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", acme.Key, nil).status == http.StatusOK
		}, "acme does not pass again after Retry-After")
	})

	t.Run("OtherTenantUnaffected", func(t *testing.T) {
		tick := time.NewTicker(100 * time.Millisecond) // 10 req/s
		defer tick.Stop()
		for range 10 {
			<-tick.C
			require.Equal(t, http.StatusOK, call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", bob.Key, nil).status)
		}
	})

	t.Run("MessageBucket", func(t *testing.T) {
		start := time.Now()
		r := call(t, http.MethodPost, p.URL+"/api/v1/push", acme.Key, pushBody("big", 50, nil))
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		r = call(t, http.MethodPost, p.URL+"/api/v1/push", acme.Key, pushBody("big", 1, nil))
		elapsed := time.Since(start)
		require.Equal(t, http.StatusTooManyRequests, r.status)
		var body struct {
			Code         string `json:"code"`
			Limit        string `json:"limit"`
			RetryAfterMs int64  `json:"retryAfterMs"`
		}
		r.json(t, &body)
		require.Equal(t, "messages", body.Limit)
		// 51 messages at 10/s from a burst of 10: 4.1 s of debt, less what the bucket
		// refilled between the two pushes (at most the time they took together).
		require.LessOrEqual(t, body.RetryAfterMs, int64(4100))
		require.GreaterOrEqual(t, body.RetryAfterMs, 4100-elapsed.Milliseconds()-1,
			"4.1 s of debt less the %s the pushes took", elapsed)
	})

	t.Run("Concurrency", func(t *testing.T) {
		// A tenant of its own, so that the request bucket never interferes.
		createTenant(t, p, tenantSpec{ID: "carol", Limits: map[string]any{"requestsPerSecond": 1000, "requestsBurst": 1000,
			"maxConcurrent": 2}})
		carol := createKey(t, p, "carol", "write")
		require.Equal(t, http.StatusOK, call(t, http.MethodPost, p.URL+"/api/v1/configure", carol.Key,
			map[string]any{"queue": "empty"}).status)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/pop/queue/empty?wait=true&timeout=10000", nil)
				req.Header.Set("Authorization", "Bearer "+carol.Key)
				// Pop again whenever the broker answers, so that two slots stay taken.
				for ctx.Err() == nil {
					if resp, err := http.DefaultClient.Do(req.Clone(ctx)); err == nil {
						resp.Body.Close()
					}
				}
			})
		}
		last := ""
		eventually(t, 5*time.Second, func() bool {
			r := call(t, http.MethodGet, p.URL+"/api/v1/pop/queue/empty?wait=true&timeout=100", carol.Key, nil)
			last = strconv.Itoa(r.status) + " " + string(r.body)
			return r.status == http.StatusTooManyRequests && limitOf(t, r) == "concurrency"
		}, "a third parked pop is admitted (last answer %s)", last)
		cancel()
		wg.Wait()
	})
}

func limitOf(t *testing.T, r reply) string {
	var body struct {
		Limit string `json:"limit"`
	}
	r.json(t, &body)
	return body.Limit
}
