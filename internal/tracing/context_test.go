package tracing_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/tracing"
)

func TestValidTraceparentFollowsTheW3CFormat(t *testing.T) {
	t.Parallel()
	const ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{ok, true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future", true}, // later versions may add fields
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", false}, // version 00 has exactly four
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", false},
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false}, // uppercase
		{"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", false},
		{"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"", false},
		{strings.Repeat("0", 55), false},
	} {
		require.Equal(t, tc.want, tracing.ValidTraceparent(tc.s), tc.s)
	}
}

func TestIncomingIgnoresWhatIsNotAUsableTraceContext(t *testing.T) {
	t.Parallel()
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	h := http.Header{}
	h.Set("traceparent", parent)
	h.Set("tracestate", "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
	p, s := tracing.Incoming(h)
	require.Equal(t, parent, p)
	require.Equal(t, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", s)

	h.Set("tracestate", strings.Repeat("a", tracing.MaxTracestateBytes+1))
	p, s = tracing.Incoming(h)
	require.Equal(t, parent, p, "a tracestate too long is dropped, the traceparent kept")
	require.Empty(t, s)

	h.Add("traceparent", parent)
	p, s = tracing.Incoming(h)
	require.Empty(t, p+s, "two traceparent headers are ignored")

	h = http.Header{}
	h.Set("traceparent", "not-a-traceparent")
	h.Set("tracestate", "a=b")
	p, s = tracing.Incoming(h)
	require.Empty(t, p+s, "a tracestate without a valid traceparent is not kept")
}

// TestOffAllocatesNothing is the cost of tracing when it is off, as the request paths
// pay it: a nil Tracer's Start, the Span calls a handler makes, and reading a request's
// trace context. None allocates.
func TestOffAllocatesNothing(t *testing.T) {
	r, err := http.NewRequest(http.MethodPost, "http://queen/api/v1/push", nil)
	require.NoError(t, err)
	r.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	require.Zero(t, testing.AllocsPerRun(1000, func() { offPath(r) }))
}

func offPath(r *http.Request) {
	var off *tracing.Tracer
	r2, sp := off.Start(r, tracing.OpPush)
	sp.SetDestination("orders", "p1")
	sp.SetGroup("billing")
	sp.SetCount(10)
	linked := 0
	sp.Link("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", &linked)
	if p, _ := sp.Stored(r2.Header); p == "" || sp.Recording() {
		panic("the request's traceparent is stored")
	}
	sp.Finish(http.StatusCreated, "")
}

// BenchmarkOff reports the per-request cost of tracing when it is off (0 allocs/op).
func BenchmarkOff(b *testing.B) {
	r, err := http.NewRequest(http.MethodPost, "http://queen/api/v1/push", nil)
	require.NoError(b, err)
	r.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	b.ReportAllocs()
	for b.Loop() {
		offPath(r)
	}
}
