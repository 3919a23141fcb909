package admin_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/admin"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// A cell's brokers carry the states the gateway reports, "unknown" for the others.
func TestCellBodyStates(t *testing.T) {
	t.Parallel()
	h := 0.25
	c := &tenant.CellStats{Cell: tenant.Cell{Name: "c1", Upstreams: []string{"http://a:1", "http://b:2", "http://c:3"}},
		Tenants: 3, Headroom: &h}
	body := admin.CellBody(c, []admin.CellUpstream{{URL: "http://a:1", State: "up"}, {URL: "http://c:3", State: "down"},
		{URL: "http://elsewhere:1", State: "up"}})
	require.Equal(t, []api.ProxyCellUpstream{{URL: "http://a:1", State: "up"}, {URL: "http://b:2", State: "unknown"},
		{URL: "http://c:3", State: "down"}}, body.Upstreams)
	require.Equal(t, 3, body.Tenants)
	require.Equal(t, &h, body.Headroom)
	require.Equal(t, "unknown", admin.CellBody(c, nil).Upstreams[0].State, "no health source: unknown")
}

// decode reads a normalized answer, its time placeholders put back as times.
func decode(t *testing.T, raw string, v any) {
	t.Helper()
	raw = strings.NewReplacer(`"<time>"`, `"2000-01-01T00:00:00Z"`, `"<time?>"`, `"2000-01-01T00:00:00Z"`).Replace(raw)
	require.NoError(t, json.Unmarshal([]byte(raw), v), raw)
}

var (
	stateRE  = regexp.MustCompile(`"state":"[a-z]+"`)
	moveIDRE = regexp.MustCompile(`^\{"id":\d+,`)
)

// The cell and move routes, their bytes and their refusals, on a real proxy.
func TestCellAndMoveRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The proxy's own health checks may or may not have probed the cells' (absent)
	// brokers yet: a state is any word.
	want := func(t *testing.T, method, path, body string, status int, want string) string {
		t.Helper()
		got, raw := b.call(t, method, path, body)
		require.Equal(t, status, got, "%s %s: %s", method, path, raw)
		norm := moveIDRE.ReplaceAllString(stateRE.ReplaceAllString(raw, `"state":"<state>"`), `{"id":<id>,`)
		require.Equal(t, want+"\n", norm, "%s %s", method, path)
		return raw
	}
	const c1 = `{"name":"c1","upstreams":[{"url":"http://127.0.0.1:9","state":"<state>"}],"capacityBytes":1000,` +
		`"capacityMessagesPerSecond":0,"closed":false,"tenants":0,"storedMessages":0,"storedBytes":0,"pushRate":0,"popRate":0,` +
		`"headroom":1,"createdAt":"<time>","updatedAt":"<time>"}`
	want(t, http.MethodPost, "/admin/v1/cells", `{"name":"c1","upstreams":["http://127.0.0.1:9"],"capacityBytes":1000}`,
		http.StatusCreated, c1)
	want(t, http.MethodGet, "/admin/v1/cells/c1", "", http.StatusOK, c1)
	want(t, http.MethodPost, "/admin/v1/cells", `{"name":"c1","upstreams":["http://127.0.0.1:9"]}`, http.StatusConflict,
		`{"code":"already_exists","error":"already exists"}`)
	want(t, http.MethodPost, "/admin/v1/cells", `{"name":"c2","upstreams":[]}`, http.StatusBadRequest,
		`{"code":"invalid_argument","error":"upstreams: must list 1 to 3 broker URLs","field":"upstreams"}`)
	want(t, http.MethodPost, "/admin/v1/cells", `{"name":"c2","upstreams":["http://127.0.0.2:9"],"closed":true}`, http.StatusCreated,
		`{"name":"c2","upstreams":[{"url":"http://127.0.0.2:9","state":"<state>"}],"capacityBytes":0,"capacityMessagesPerSecond":0,`+
			`"closed":true,"tenants":0,"storedMessages":0,"storedBytes":0,"pushRate":0,"popRate":0,"headroom":null,`+
			`"createdAt":"<time>","updatedAt":"<time>"}`)
	_, raw := b.call(t, http.MethodPatch, "/admin/v1/cells/c2", `{"closed":false,"capacityMessagesPerSecond":10}`)
	var c api.ProxyCell
	decode(t, raw, &c)
	require.False(t, c.Closed)
	require.InDelta(t, 10.0, c.CapacityMessagesPerSecond, 1e-9)
	want(t, http.MethodPatch, "/admin/v1/cells/c9", `{"closed":true}`, http.StatusNotFound, `{"code":"not_found","error":"not found"}`)
	_, raw = b.call(t, http.MethodGet, "/admin/v1/cells", "")
	var list api.ProxyCellList
	decode(t, raw, &list)
	require.GreaterOrEqual(t, len(list.Cells), 2, raw)

	// Tenants: named into a cell, or placed by the policy among the open cells.
	want(t, http.MethodPost, "/admin/v1/tenants", `{"id":"acme","cell":"c9"}`, http.StatusBadRequest,
		`{"code":"invalid_argument","error":"cell: unknown cell \"c9\"","field":"cell"}`)
	_, raw = b.call(t, http.MethodPost, "/admin/v1/tenants", `{"id":"acme","cell":"c1"}`)
	var tn api.ProxyTenant
	decode(t, raw, &tn)
	require.Equal(t, "c1", tn.Cell)
	for _, x := range list.Cells {
		if x.Name != "c1" {
			_, _ = b.call(t, http.MethodPatch, "/admin/v1/cells/"+x.Name, `{"closed":true}`)
		}
	}
	_, raw = b.call(t, http.MethodPost, "/admin/v1/tenants", `{"id":"beta"}`)
	decode(t, raw, &tn)
	require.Equal(t, "c1", tn.Cell, "the only open cell")
	b.call(t, http.MethodPatch, "/admin/v1/cells/c1", `{"closed":true}`)
	want(t, http.MethodPost, "/admin/v1/tenants", `{"id":"gamma"}`, http.StatusConflict,
		`{"code":"conflict","error":"conflict: no open cell"}`)

	// Moves.
	want(t, http.MethodPost, "/admin/v1/tenants/acme/move", `{"cell":"c1"}`, http.StatusConflict,
		`{"code":"conflict","error":"conflict: the tenant already lives in that cell"}`)
	want(t, http.MethodPost, "/admin/v1/tenants/acme/move", `{"cell":"c9"}`, http.StatusBadRequest,
		`{"code":"invalid_argument","error":"cell: unknown cell \"c9\"","field":"cell"}`)
	want(t, http.MethodPost, "/admin/v1/tenants/nobody/move", `{"cell":"c2"}`, http.StatusNotFound,
		`{"code":"not_found","error":"not found"}`)
	raw = want(t, http.MethodPost, "/admin/v1/tenants/acme/move", `{"cell":"c2"}`, http.StatusAccepted,
		`{"id":<id>,"tenant":"acme","from":"c1","to":"c2","phase":"copying","progress":{},"error":null,"cancelRequested":false,`+
			`"pauseMs":null,"createdAt":"<time>","updatedAt":"<time>","finishedAt":null}`)
	var mv api.ProxyMove
	decode(t, raw, &mv)
	id := strconv.FormatInt(mv.ID, 10)

	_, raw = b.call(t, http.MethodGet, "/admin/v1/moves?tenant=acme", "")
	var moves api.ProxyMoveList
	decode(t, raw, &moves)
	require.Len(t, moves.Moves, 1, raw)
	require.Equal(t, mv.ID, moves.Moves[0].ID)
	want(t, http.MethodGet, "/admin/v1/moves?tenant=beta", "", http.StatusOK, `{"moves":[]}`)
	want(t, http.MethodGet, "/admin/v1/moves?limit=x", "", http.StatusBadRequest,
		`{"code":"invalid_argument","error":"limit: must be an integer","field":"limit"}`)
	want(t, http.MethodGet, "/admin/v1/moves/x", "", http.StatusNotFound, `{"code":"not_found","error":"not found"}`)
	var got api.ProxyMove
	_, raw = b.call(t, http.MethodGet, "/admin/v1/moves/"+id, "")
	decode(t, raw, &got)
	require.Equal(t, mv.ID, got.ID)

	// A mover may run the move meanwhile (and fail it: c2's broker does not exist);
	// while it is live, the tenant shows it and a second move is refused.
	_, raw = b.call(t, http.MethodGet, "/admin/v1/tenants/acme", "")
	decode(t, raw, &tn)
	if tn.Move != nil {
		require.Equal(t, mv.ID, tn.Move.ID)
		require.Equal(t, "c2", tn.Move.To)
	}
	want(t, http.MethodDelete, "/admin/v1/cells/c1", "", http.StatusConflict,
		`{"code":"conflict","error":"conflict: tenants live in the cell or a move names it"}`)
	status, raw := b.call(t, http.MethodPost, "/admin/v1/moves/"+id+"/cancel", "")
	switch status {
	case http.StatusOK:
		decode(t, raw, &got)
		require.True(t, got.CancelRequested, raw)
	default:
		require.Equal(t, http.StatusConflict, status, raw)
		require.Contains(t, raw, "finished")
	}

	// A cell nobody lives in and no live move names goes.
	want(t, http.MethodPost, "/admin/v1/cells", `{"name":"c3","upstreams":["http://127.0.0.3:9"]}`, http.StatusCreated,
		`{"name":"c3","upstreams":[{"url":"http://127.0.0.3:9","state":"<state>"}],"capacityBytes":0,"capacityMessagesPerSecond":0,`+
			`"closed":false,"tenants":0,"storedMessages":0,"storedBytes":0,"pushRate":0,"popRate":0,"headroom":null,`+
			`"createdAt":"<time>","updatedAt":"<time>"}`)
	want(t, http.MethodDelete, "/admin/v1/cells/c3", "", http.StatusOK, `{"deleted":true}`)
	want(t, http.MethodGet, "/admin/v1/cells/c3", "", http.StatusNotFound, `{"code":"not_found","error":"not found"}`)
}
