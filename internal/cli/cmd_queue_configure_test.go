package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/cli"
)

// TestQueueConfigureSendsOnlyGivenOptions: queue configure names only the options
// given, without a mode, so the broker merges them and every other option keeps its
// stored value; --replace asks for the reset of the others.
func TestQueueConfigureSendsOnlyGivenOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want map[string]any
	}{
		{name: "LeaseTimeAlone", args: []string{"--lease-time", "10"},
			want: map[string]any{"queue": "q", "options": map[string]any{"leaseTime": 10.0}}},
		{name: "Replace", args: []string{"--lease-time", "10", "--replace"},
			want: map[string]any{"queue": "q", "mode": "replace", "options": map[string]any{"leaseTime": 10.0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bodies := make(chan map[string]any, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				raw, _ := io.ReadAll(r.Body)
				var got map[string]any
				_ = json.Unmarshal(raw, &got)
				bodies <- got
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"configured":true,"queue":"q","options":{"leaseTime":10,"retryLimit":7}}`))
			}))
			t.Cleanup(srv.Close)
			code, _, stderr := runMain(t, srv.URL, append([]string{"queue", "configure", "q"}, tc.args...)...)
			require.Equal(t, cli.ExitOK, code, stderr)
			require.Equal(t, tc.want, <-bodies)
		})
	}
}
