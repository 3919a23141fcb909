package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/cli"
	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// realAdmin runs queenctl proxy commands against a real queen-proxy's admin API.
type realAdmin struct{ env []string }

func startRealAdmin(t *testing.T) *realAdmin {
	t.Helper()
	broker := proxytest.StartBroker(t, daemontest.Options{})
	p := proxytest.Start(t, proxytest.Options{Backends: []string{broker.URL}})
	return &realAdmin{env: []string{"QUEEN_PROXY_ADMIN_URL=" + p.AdminURL, "QUEEN_PROXY_ADMIN_TOKEN=" + proxytest.AdminToken,
		"HOME=" + t.TempDir()}}
}

func (r *realAdmin) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), append([]string{"proxy"}, args...), r.env, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// ok runs a command that must succeed with -o json and decodes its answer strictly.
func (r *realAdmin) ok(t *testing.T, v any, args ...string) {
	t.Helper()
	code, out, errOut := r.run(t, append(args, "-o", "json")...)
	require.Equal(t, cli.ExitOK, code, "%v: %s%s", args, out, errOut)
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(v), "%s", out)
}

// queenctl proxy cell, tenant move and move, round trip through a real admin API.
func TestProxyCellCommandsRoundTrip(t *testing.T) {
	t.Parallel()
	r := startRealAdmin(t)

	var c api.ProxyCell
	r.ok(t, &c, "cell", "create", "c1", "--upstreams", "http://127.0.0.1:9/,http://127.0.0.2:9/", "--capacity-bytes", "1000")
	require.Equal(t, "c1", c.Name)
	require.Len(t, c.Upstreams, 2)
	require.Equal(t, "http://127.0.0.1:9/", c.Upstreams[0].URL)
	require.EqualValues(t, 1000, c.CapacityBytes)
	require.NotNil(t, c.Headroom)
	r.ok(t, &c, "cell", "create", "c2", "--upstreams", "http://127.0.0.3:9/", "--closed", "true")
	require.True(t, c.Closed)
	r.ok(t, &c, "cell", "open", "c2")
	require.False(t, c.Closed)
	r.ok(t, &c, "cell", "close", "c2")
	require.True(t, c.Closed)
	r.ok(t, &c, "cell", "update", "c1", "--capacity-rate", "25")
	require.InDelta(t, 25.0, c.CapacityMessagesPerSecond, 1e-9)
	require.EqualValues(t, 1000, c.CapacityBytes, "the update kept what it did not name")

	code, _, errOut := r.run(t, "cell", "create", "c3", "--upstreams", "http://a/?x=1")
	require.Equal(t, cli.ExitFailure, code)
	require.Contains(t, errOut, "(field upstreams)")
	code, _, errOut = r.run(t, "cell", "update", "c1")
	require.Equal(t, cli.ExitUsage, code, errOut)

	var list api.ProxyCellList
	r.ok(t, &list, "cell", "list")
	names := []string{}
	for _, x := range list.Cells {
		names = append(names, x.Name)
	}
	require.Subset(t, names, []string{"c1", "c2"})
	code, out, errOut := r.run(t, "cell", "show", "c1")
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Contains(t, out, "NAME  UPSTREAMS")
	require.Contains(t, out, "c1    http://127.0.0.1:9/ (")

	var tn api.ProxyTenant
	r.ok(t, &tn, "tenant", "create", "acme", "--cell", "c1")
	require.Equal(t, "c1", tn.Cell)
	r.ok(t, &tn, "tenant", "create", "beta", "--cell", "c2")
	require.Equal(t, "c2", tn.Cell, "a closed cell may be named")
	code, _, errOut = r.run(t, "tenant", "create", "gamma", "--cell", "c9")
	require.Equal(t, cli.ExitFailure, code)
	require.Contains(t, errOut, "(field cell)")

	code, _, errOut = r.run(t, "tenant", "move", "acme", "--cell", "c1")
	require.Equal(t, cli.ExitFailure, code)
	require.Contains(t, errOut, "already lives in that cell")
	code, _, errOut = r.run(t, "tenant", "move", "acme")
	require.Equal(t, cli.ExitUsage, code, errOut)
	var mv api.ProxyMove
	r.ok(t, &mv, "tenant", "move", "acme", "--cell", "c2")
	require.Equal(t, api.ProxyMove{ID: mv.ID, Tenant: "acme", From: "c1", To: "c2", Phase: "copying", Progress: json.RawMessage(`{}`),
		CreatedAt: mv.CreatedAt, UpdatedAt: mv.UpdatedAt}, mv)
	id := strconv.FormatInt(mv.ID, 10)

	var moves api.ProxyMoveList
	r.ok(t, &moves, "move", "list", "--tenant", "acme")
	require.Len(t, moves.Moves, 1)
	require.Equal(t, mv.ID, moves.Moves[0].ID)
	r.ok(t, &moves, "move", "list", "--tenant", "beta")
	require.Empty(t, moves.Moves)
	var got api.ProxyMove
	r.ok(t, &got, "move", "show", id)
	require.Equal(t, mv.ID, got.ID)
	require.Equal(t, "c2", got.To)
	code, _, _ = r.run(t, "move", "show", "999999")
	require.Equal(t, cli.ExitNotFound, code)

	// The cell a tenant lives in, or a live move names, stays.
	code, _, errOut = r.run(t, "cell", "delete", "c1")
	require.Equal(t, cli.ExitFailure, code)
	require.Contains(t, errOut, "tenants live in the cell or a move names it")

	// A cancel before the switch is taken; a mover may have ended the move first
	// (its cell's brokers do not exist), and then the cancel is refused.
	code, out, errOut = r.run(t, "move", "cancel", id, "-o", "json")
	if code == cli.ExitOK {
		require.NoError(t, json.Unmarshal([]byte(out), &got))
		require.True(t, got.CancelRequested || got.FinishedAt != nil, out)
	} else {
		require.Equal(t, cli.ExitFailure, code)
		require.Contains(t, errOut, "finished")
	}
}

// --wait follows the move to its end: exit 0 when done, 1 when it failed.
func TestProxyTenantMoveWait(t *testing.T) {
	t.Parallel()
	s := newAdminStub(t)
	code, out, errOut := s.run(t, "", "tenant", "move", "acme", "--cell", "c2", "--wait", "--poll", "10ms")
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Equal(t, "ID  TENANT  FROM     TO  PHASE  PAUSE MS  ERROR\n7   acme    default  c2  done   12.5      -\n", out)
	var body api.ProxyMoveCreate
	s.body(t, "POST /admin/v1/tenants/acme/move", &body)
	require.Equal(t, "c2", body.Cell)

	code, out, errOut = s.run(t, "", "tenant", "move", "bob", "--cell", "c2", "--wait", "--poll", "10ms")
	require.Equal(t, cli.ExitFailure, code)
	require.Contains(t, out, "failed")
	require.Contains(t, errOut, "move 8 of acme ended failed: no broker of cell c2 is up")

	code, out, errOut = s.run(t, "", "tenant", "move", "acme", "--cell", "c2")
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Contains(t, out, "copying", "without --wait: the move as started")
}
