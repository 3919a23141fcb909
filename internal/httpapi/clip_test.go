package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRefusalsDoNotEchoHugeValues: a message that quotes the value it refuses is cut
// at maxMessageBytes, in every envelope (the broker's, the KV one, a transaction's),
// so a bad request of 70 000 characters gets a small answer.
func TestRefusalsDoNotEchoHugeValues(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	huge := strings.Repeat("m", 70_000)
	for _, tc := range []struct{ path, body string }{
		{"/api/v1/configure", `{"queue":"clipq","mode":"` + huge + `"}`},
		{"/api/v1/kv", `[{"op":"` + huge + `","ns":"n","key":"k"}]`},
		{"/api/v1/transaction", `{"operations":[{"type":"` + huge + `"}]}`},
	} {
		r := b.post(t, tc.path, tc.body)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %.300s", tc.path, r.body)
		require.Less(t, len(r.body), 2*maxMessageBytes, "%s: a %d-byte answer: %.300s", tc.path, len(r.body), r.body)
		require.Contains(t, string(r.body), "…", "%s: the cut is marked: %.300s", tc.path, r.body)
	}
}

func TestClipMessageCutsAtACharacter(t *testing.T) {
	t.Parallel()
	require.Equal(t, "short", clipMessage("short"))
	msg := strings.Repeat("a", maxMessageBytes-1) + "é" + "tail"
	got := clipMessage(msg)
	require.Equal(t, strings.Repeat("a", maxMessageBytes-1)+"…", got, "the two-byte é straddles the limit")
}
