package daemon_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMoveToAnUnreachableCellIsRetriedWithABackoff: a move whose target cell has no
// broker up cannot copy; the mover records why on the move and runs it again after
// 1 s, then 2 s, …, instead of at once (it used to spin: thousands of failed runs and
// move updates a second). Cancelling still ends it.
func TestMoveToAnUnreachableCellIsRetriedWithABackoff(t *testing.T) {
	c := setupCells(t)
	mv := moveToUnreachableCell(t, c, "acme")

	// The third failed run comes at least 1 s + 2 s after the first.
	var runs []time.Time
	eventually(t, 30*time.Second, func() bool {
		runs = failedRuns(t, c.logs.String())
		return len(runs) >= 3
	}, "the move was not retried three times")
	require.GreaterOrEqual(t, runs[1].Sub(runs[0]), 900*time.Millisecond, "second run after %s", runs[1].Sub(runs[0]))
	require.GreaterOrEqual(t, runs[2].Sub(runs[1]), 1900*time.Millisecond, "third run after %s", runs[2].Sub(runs[1]))
	c.proxy.Admin(t, http.MethodGet, fmt.Sprintf("/admin/v1/moves/%d", mv.ID), nil, mv)
	require.Equal(t, "copying", mv.Phase)
	require.Contains(t, mv.Error, "no broker of cell three is up")

	cancelMove(t, c, mv)
}

// unreachableMove is a move as the admin API answers it.
type unreachableMove struct {
	ID    int64  `json:"id"`
	Phase string `json:"phase"`
	Error string `json:"error"`
}

// moveToUnreachableCell adds cell "three", whose only broker cannot be reached, and
// starts a move of a new tenant id from the default cell to it: the move cannot copy.
func moveToUnreachableCell(t *testing.T, c *cellBundle, id string) *unreachableMove {
	t.Helper()
	var out map[string]any
	require.Equal(t, http.StatusCreated, c.proxy.Admin(t, http.MethodPost, "/admin/v1/cells",
		map[string]any{"name": "three", "upstreams": []string{"http://127.0.0.1:9"}}, &out), "%v", out)
	createTenantIn(t, c.proxy, id, "default")
	mv := &unreachableMove{}
	require.Equal(t, http.StatusAccepted, c.proxy.Admin(t, http.MethodPost, "/admin/v1/tenants/"+id+"/move", map[string]any{"cell": "three"}, mv))
	return mv
}

// cancelMove cancels mv and waits for it to end failed, "cancelled".
func cancelMove(t *testing.T, c *cellBundle, mv *unreachableMove) {
	t.Helper()
	var out map[string]any
	require.Equal(t, http.StatusOK, c.proxy.Admin(t, http.MethodPost, fmt.Sprintf("/admin/v1/moves/%d/cancel", mv.ID), nil, &out), "%v", out)
	eventually(t, 60*time.Second, func() bool {
		c.proxy.Admin(t, http.MethodGet, fmt.Sprintf("/admin/v1/moves/%d", mv.ID), nil, mv)
		return mv.Phase == "failed"
	}, "the cancelled move never ended")
	require.Equal(t, "cancelled", mv.Error)
}

// failedRuns returns the times of the proxy's "move failed" log lines.
func failedRuns(t *testing.T, logs string) []time.Time {
	t.Helper()
	var out []time.Time
	for line := range strings.Lines(logs) {
		if !strings.Contains(line, `msg="move failed"`) {
			continue
		}
		stamp, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		at, err := time.Parse(time.RFC3339Nano, stamp)
		require.NoError(t, err, "%s", line)
		out = append(out, at)
	}
	return out
}
