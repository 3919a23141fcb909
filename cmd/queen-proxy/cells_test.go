package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
)

// The cell commands work on the proxy database with no server running, and print
// the admin API's bodies.
func TestCellCommands(t *testing.T) {
	t.Parallel()
	b := &cliBundle{env: append(daemontest.PGEnv(t, pgtest.NewDBURL(t)), "QUEEN_PROXY_LOGIN=false", "USER=tester")}

	var c api.ProxyCell
	b.ok(t, &c, "", "cell", "create", "eu-1", "--upstreams", "http://b1:6632,http://b2:6632", "--capacity-bytes", "1000")
	require.Equal(t, "eu-1", c.Name)
	require.Equal(t, []api.ProxyCellUpstream{{URL: "http://b1:6632", State: "unknown"}, {URL: "http://b2:6632", State: "unknown"}},
		c.Upstreams, "the command line has no health checks")
	require.EqualValues(t, 1000, c.CapacityBytes)
	require.NotNil(t, c.Headroom)
	require.InDelta(t, 1.0, *c.Headroom, 1e-9)

	code, _, errOut := b.run(t, "", "cell", "create", "eu-2", "--upstreams", "ftp://b3")
	require.Equal(t, exitFailure, code)
	require.Contains(t, errOut, "invalid upstreams")
	code, _, errOut = b.run(t, "", "cell", "update", "eu-1")
	require.Equal(t, exitUsage, code, errOut)

	b.ok(t, &c, "", "cell", "close", "eu-1")
	require.True(t, c.Closed)
	b.ok(t, &c, "", "cell", "open", "eu-1")
	require.False(t, c.Closed)
	b.ok(t, &c, "", "cell", "update", "eu-1", "--capacity-rate", "50", "--upstreams", "http://b9:6632")
	require.InDelta(t, 50.0, c.CapacityMessagesPerSecond, 1e-9)
	require.Equal(t, "http://b9:6632", c.Upstreams[0].URL)

	var tn api.ProxyTenant
	b.ok(t, &tn, "", "tenant", "create", "acme")
	require.Equal(t, "eu-1", tn.Cell, "the only cell stored: the policy's pick")
	b.ok(t, &tn, "", "tenant", "create", "beta", "--cell", "default")
	require.Equal(t, "default", tn.Cell)
	code, _, errOut = b.run(t, "", "tenant", "create", "gamma", "--cell", "nowhere")
	require.Equal(t, exitFailure, code)
	require.Contains(t, errOut, "invalid cell")

	var list api.ProxyCellList
	b.ok(t, &list, "", "cell", "list")
	require.Len(t, list.Cells, 1)
	require.Equal(t, 1, list.Cells[0].Tenants)
	code, out, errOut := b.run(t, "", "cell", "list")
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, "NAME  UPSTREAMS       CLOSED  TENANTS  STORED BYTES  MSG/S  HEADROOM\n"+
		"eu-1  http://b9:6632  false   1        0             0      1.00\n", out)

	code, _, errOut = b.run(t, "", "cell", "delete", "eu-1")
	require.Equal(t, exitFailure, code)
	require.Contains(t, errOut, "tenants live in the cell")
	b.ok(t, nil, "", "tenant", "delete", "acme")
	var del api.ProxyCellDeleted
	b.ok(t, &del, "", "cell", "delete", "eu-1")
	require.True(t, del.Deleted)
	code, _, errOut = b.run(t, "", "cell", "show", "eu-1")
	require.Equal(t, exitFailure, code)
	require.Contains(t, errOut, "not found")
}
