package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
)

func TestShowQueueOptions(t *testing.T) {
	t.Parallel()
	// optionLines renders d and returns its "ttl" and "retryDelay" lines ("" when absent).
	optionLines := func(d api.QueueDetail) (ttl, retryDelay, out string) {
		var buf bytes.Buffer
		showQueue(&tw{w: &buf}, &d)
		for _, l := range strings.Split(buf.String(), "\n") {
			switch {
			case strings.HasPrefix(l, "ttl "):
				ttl = l
			case strings.HasPrefix(l, "retryDelay "):
				retryDelay = l
			}
		}
		return ttl, retryDelay, buf.String()
	}
	stored := api.QueueOptionsEcho{LeaseTime: 300, RetryLimit: 3, TTL: 3600, RetryDelay: 1000}

	for _, tc := range []struct {
		name                 string
		enforced             api.EnforcedOptions
		wantTTL, wantRetries string
	}{
		{name: "StoredByUpstream", enforced: api.EnforcedOptions{},
			wantTTL:     "ttl                        3600s (stored by upstream, not enforced)",
			wantRetries: "retryDelay                 1000ms (stored by upstream, not enforced)"},
		{name: "SetThroughQueen", enforced: api.EnforcedOptions{TTL: true, RetryDelay: true},
			wantTTL:     "ttl                        3600s (enforced)",
			wantRetries: "retryDelay                 1000ms (enforced)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ttl, retryDelay, _ := optionLines(api.QueueDetail{Name: "q", Options: &stored, EnforcedOptions: &tc.enforced})
			require.Equal(t, tc.wantTTL, ttl)
			require.Equal(t, tc.wantRetries, retryDelay)
		})
	}

	t.Run("ZeroIsOff", func(t *testing.T) {
		t.Parallel()
		off := api.QueueOptionsEcho{LeaseTime: 300, RetryLimit: 3}
		ttl, retryDelay, _ := optionLines(api.QueueDetail{Name: "q", Options: &off, EnforcedOptions: &api.EnforcedOptions{}})
		require.Equal(t, "ttl                        0s", ttl)
		require.Equal(t, "retryDelay                 0ms", retryDelay)
	})

	t.Run("UpstreamBrokerSendsNoOptions", func(t *testing.T) {
		t.Parallel()
		ttl, _, out := optionLines(api.QueueDetail{Name: "q"})
		require.Empty(t, ttl)
		require.NotContains(t, out, "OPTION")
		require.Contains(t, out, "Messages:  0 total")
	})
}
