package cors

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOrigin(t *testing.T) {
	t.Parallel()
	require.Empty(t, Origin(nil, "http://a.example"), "nothing allowed")
	require.Equal(t, "*", Origin([]string{"http://b.example", "*"}, "http://a.example"))
	require.Equal(t, "http://a.example", Origin([]string{"http://a.example"}, "http://a.example"))
	require.Empty(t, Origin([]string{"http://a.example"}, "http://a.example.evil"), "exact matches only")
	require.Empty(t, Origin([]string{"http://a.example"}, ""), "no Origin header")
}

func TestApply(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest(http.MethodOptions, "/api/v1/push", nil)
	r.Header.Set("Origin", "http://a.example")
	h := http.Header{}
	require.True(t, Apply(h, []string{"http://a.example"}, r))
	require.Equal(t, "http://a.example", h.Get("Access-Control-Allow-Origin"))
	require.Equal(t, []string{"Origin"}, h.Values("Vary"))
	require.Equal(t, "86400", h.Get("Access-Control-Max-Age"), "a preflight")

	r = httptest.NewRequest(http.MethodGet, "/health", nil)
	r.Header.Set("Origin", "http://a.example")
	h = http.Header{}
	require.True(t, Apply(h, []string{"*"}, r))
	require.Empty(t, h.Values("Vary"), "* does not vary")
	require.Empty(t, h.Get("Access-Control-Max-Age"))
	refused := http.Header{}
	require.False(t, Apply(refused, []string{"http://b.example"}, r))
	require.Equal(t, []string{"Origin"}, refused.Values("Vary"), "a refusal varies by Origin too")
	require.Empty(t, refused.Get("Access-Control-Allow-Origin"))
	none := http.Header{}
	require.False(t, Apply(none, nil, r))
	require.Empty(t, none, "CORS off adds nothing")
}

func TestIsHeader(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{"Access-Control-Allow-Origin": true, "access-control-max-age": true,
		"Access-Control-": false, "Vary": false, "X-Access-Control-Foo": false} {
		require.Equal(t, want, IsHeader(name), name)
	}
}
