package proxytest

import (
	"testing"

	"github.com/queenmq/queen/internal/daemontest"
)

// TenancyHeader is the tenancy header of the brokers StartBroker runs, which is also
// the proxy's default QUEEN_TENANCY_HEADER.
const TenancyHeader = "X-Queen-Tenant"

// StartBroker runs a real broker for a proxy to front, as daemontest.Start does with
// o, with tenancy on (QUEEN_TENANCY_HEADER=TenancyHeader) and the per-tenant usage
// that feeds the proxy's quotas recomputed every second instead of every 30 s
// (QUEEN_TENANCY_USAGE_INTERVAL=1s). o.Env comes first and so overrides both.
func StartBroker(t testing.TB, o daemontest.Options) *daemontest.Server {
	t.Helper()
	o.Env = append(append([]string{}, o.Env...),
		"QUEEN_TENANCY_HEADER="+TenancyHeader, "QUEEN_TENANCY_USAGE_INTERVAL=1s")
	return daemontest.Start(t, o)
}
