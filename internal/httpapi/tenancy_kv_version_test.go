package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportedKVVersionsNeverComeBack: after a tenant's KV rows are imported into a
// cell whose version sequence is behind theirs (a move into a younger cell), every
// write gets a version past the imported ones, so a client's write expecting the
// version it read before the move cannot apply over a value it never saw.
func TestImportedKVVersionsNeverComeBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		version int64
	}{{"SmallGap", 58}, {"LargeGap", 5_000_000}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := startCell(t, "")
			c.ok(t, http.MethodPost, "/internal/api/tenancy/import/state", map[string]any{"tenant": "acme", "mode": "all",
				"kv": []any{map[string]any{"tenant": "acme", "ns": "n", "key": "k", "value": "before-move",
					"version": tc.version, "updated_at": "2026-01-01T00:00:00Z"}}})
			for range 3 {
				a := c.call(t, "acme", http.MethodPost, "/api/v1/kv",
					[]any{map[string]any{"op": "put", "ns": "n", "key": "k", "value": "after", "forever": true}})
				require.Equal(t, http.StatusOK, a.status, "%s", a.body)
				got := a.object(t)["results"].([]any)[0].(map[string]any)
				require.Greater(t, got["version"].(float64), float64(tc.version), "a version came back: %s", a.body)
			}
			a := c.call(t, "acme", http.MethodPost, "/api/v1/kv",
				[]any{map[string]any{"op": "put", "ns": "n", "key": "k", "value": "stale", "forever": true, "expect": tc.version}})
			require.Equal(t, http.StatusOK, a.status, "%s", a.body)
			require.Equal(t, false, a.object(t)["results"].([]any)[0].(map[string]any)["applied"], "%s", a.body)
		})
	}
}
