package proxytest_test

import (
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/proxy/proxytest"
	"github.com/queenmq/queen/internal/testlog"
)

func TestMain(m *testing.M) { os.Exit(proxytest.Main(m)) }

func TestExec(t *testing.T) {
	t.Parallel()
	broker := proxytest.StartBroker(t, daemontest.Options{})

	t.Run("ServesUntilSIGTERMThenExitsZero", func(t *testing.T) {
		t.Parallel()
		logs := &testlog.Buffer{}
		p := proxytest.Exec(t, proxytest.Options{Backends: []string{broker.URL}, Logs: logs, Env: []string{"LOG_LEVEL=info"}})
		require.Equal(t, http.StatusOK, get(t, p.URL+"/health/ready"))
		require.Equal(t, http.StatusOK, p.Admin(t, http.MethodGet, "/admin/v1/tenants", nil, nil))
		p.WaitBackends(t, "up", 0)
		require.Contains(t, logs.String(), "queen-proxy starting", "the child's output is captured, at Env's LOG_LEVEL")

		require.NoError(t, p.Stop())
		require.NoError(t, p.Stop(), "a second Stop returns the first one's result")
		// Stop's nil says the process exited 0 after SIGTERM, so its listener is gone
		// with it; the port itself proves nothing afterwards (another test's listener on
		// 127.0.0.1:0 may be given it at once).
	})

	t.Run("EnvOverridesWhatExecAdds", func(t *testing.T) {
		t.Parallel()
		p := proxytest.Exec(t, proxytest.Options{Backends: []string{broker.URL},
			Env: []string{"QUEEN_PROXY_ADMIN_TOKEN=another-admin-token-0123456789abcdef"}})
		require.Equal(t, http.StatusUnauthorized, p.Admin(t, http.MethodGet, "/admin/v1/tenants", nil, nil))
	})

	t.Run("SharesADatabaseWithStart", func(t *testing.T) {
		t.Parallel()
		a := proxytest.Start(t, proxytest.Options{Backends: []string{broker.URL}})
		b := proxytest.Exec(t, proxytest.Options{Backends: []string{broker.URL}, DBURL: a.DBURL})
		require.Equal(t, a.DBURL, b.DBURL)
		require.Equal(t, http.StatusCreated, b.Admin(t, http.MethodPost, "/admin/v1/tenants", map[string]string{"id": "acme"}, nil))
		require.Equal(t, http.StatusOK, a.Admin(t, http.MethodGet, "/admin/v1/tenants/acme", nil, nil))
	})
}

// get returns the status of GET url.
func get(t *testing.T, url string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}
