package daemon_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTraceContextCrossesTheProxy pushes through the proxy under a W3C traceparent and
// tracestate: the broker stores them with the message (the proxy forwards both
// headers), and a pop through the proxy returns them.
func TestTraceContextCrossesTheProxy(t *testing.T) {
	t.Parallel()
	p := setupPair(t)
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	r := call(t, http.MethodPost, p.proxy.URL+"/api/v1/push", p.acme.Key,
		map[string]any{"items": []map[string]any{{"queue": "traced", "payload": map[string]any{"n": 1}}}},
		"traceparent", parent, "tracestate", "vendor=abc")
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	msgs := p.pop(t, p.acme, "traced", 1, "")
	require.Len(t, msgs, 1)
	require.Equal(t, parent, msgs[0].Traceparent)
	require.Equal(t, "vendor=abc", msgs[0].Tracestate)
}
