package cellsim

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// Overhead is the routing overhead: the latency of one request through the proxy and
// straight to the tenant's broker, and the difference of the percentiles.
type Overhead struct {
	Samples                      int
	ProxyP50, ProxyP99           time.Duration
	DirectP50, DirectP99         time.Duration
	OverheadP50, OverheadP99     time.Duration
	Request, Tenant, TenantsCell string
}

// probe measures the same one-message push to t's probe queue, alternately through
// the proxy with t's key and straight to its cell's broker with the tenancy header.
func (s *sim) probe(ctx context.Context, t *Tenant) (Overhead, error) {
	c := s.cells[s.cellIndex(t.Cell)]
	direct := client.New(c.Broker.URL, client.WithHTTPClient(s.hc), client.WithHeader(proxytest.TenancyHeader, t.ID))
	o := Overhead{Samples: s.cfg.ProbeSamples, Request: "POST /api/v1/push, 1 message of ≈40 B", Tenant: t.ID, TenantsCell: c.Name}
	var viaProxy, straight []time.Duration
	push := func(cl *client.Client, i int, how string) (time.Duration, error) {
		raw, _ := json.Marshal(map[string]any{"probe": i, "via": how})
		start := time.Now()
		res, err := cl.Push(ctx, api.PushItem{Queue: probeQueue, Payload: raw})
		d := time.Since(start)
		if err == nil && !allStored(res) {
			err = fmt.Errorf("answered %+v", res)
		}
		if err != nil {
			return 0, fmt.Errorf("probe push %s: %w", how, err)
		}
		return d, nil
	}
	// A few unmeasured rounds open the connections on both paths.
	for i := range 5 + s.cfg.ProbeSamples {
		dp, err := push(t.api, i, "proxy")
		if err != nil {
			return o, err
		}
		dd, err := push(direct, i, "direct")
		if err != nil {
			return o, err
		}
		if i >= 5 {
			viaProxy, straight = append(viaProxy, dp), append(straight, dd)
		}
	}
	o.ProxyP50, o.ProxyP99 = percentile(viaProxy, 50), percentile(viaProxy, 99)
	o.DirectP50, o.DirectP99 = percentile(straight, 50), percentile(straight, 99)
	o.OverheadP50, o.OverheadP99 = o.ProxyP50-o.DirectP50, o.ProxyP99-o.DirectP99
	return o, nil
}

// percentile is the p-th percentile (nearest rank) of ds; 0 for none.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}
