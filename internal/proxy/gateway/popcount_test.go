package gateway

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPopCounter(t *testing.T) {
	t.Parallel()
	body := `{"success":true,"queue":"q","messages":[{"data":{"messages":[1,2]},"s":"a,\"]"},{"x":[[]]},3],"leaseId":"l"}`
	for _, chunk := range []int{1, 3, len(body)} {
		c := newPopCounter()
		for i := 0; i < len(body); i += chunk {
			_, _ = c.Write([]byte(body[i:min(i+chunk, len(body))]))
		}
		require.EqualValues(t, 3, c.count(), "chunk %d", chunk)
	}
	c := newPopCounter()
	_, _ = c.Write([]byte(`{"messages":[]}`))
	require.Zero(t, c.count())
}

func TestCanonicalPath(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"/api/v1/push", "/api/v1/pop/queue/a.b?x=%2F", "/"} {
		require.True(t, canonicalPath(ok), ok)
	}
	for _, bad := range []string{"//api", "/a/./b", "/a/../b", "/a/..", `/a\b`, "/a%2fb", "/a%5Cb", "/a%2eb", "/a%00"} {
		require.False(t, canonicalPath(bad), bad)
	}
}
