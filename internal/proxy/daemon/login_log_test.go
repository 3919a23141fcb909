package daemon_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A refused login logs the user's name only when such a user exists: a name that
// matches no user may be a password typed into the wrong field, and stays out of the
// log.
func TestRefusedLoginLogsNoUnknownName(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{login: true, env: []string{"LOG_LEVEL=info"}})
	createUser(t, b.proxy, "alice", "alice-password", "admin", "")
	const pasted = "Pasted-Password-4711"
	for _, creds := range [][2]string{{pasted, "whatever-password"}, {"alice", "wrong-password"}} {
		r := call(t, http.MethodPost, b.proxy.URL+"/api/login", "", map[string]string{"username": creds[0], "password": creds[1]})
		require.Equal(t, http.StatusUnauthorized, r.status, "%s", r.body)
	}
	logs := b.logs.String()
	require.NotContains(t, logs, pasted, "the unknown name is in the log")
	var refused []string
	for line := range strings.Lines(logs) {
		if strings.Contains(line, `msg="login refused"`) {
			refused = append(refused, line)
		}
	}
	require.Len(t, refused, 2, "%s", logs)
	require.Contains(t, refused[0], "user_exists=false")
	require.Contains(t, refused[1], "user=alice ")
}

// TestLoginWithAnImpossibleNameIsRefused: a user name no user can have (a NUL, bytes
// that are not UTF-8) is a refused login (401), not "authentication is unavailable"
// (503): the database refused such a name with an error before it was checked first.
func TestLoginWithAnImpossibleNameIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{login: true})
	createUser(t, b.proxy, "alice", "alice-password", "admin", "")
	for _, name := range []string{"\x00", "alice\x00", "alice\xff"} {
		r := call(t, http.MethodPost, b.proxy.URL+"/api/login", "", map[string]string{"username": name, "password": "alice-password"})
		require.Equal(t, http.StatusUnauthorized, r.status, "%q: %s", name, r.body)
	}
	r := call(t, http.MethodPost, b.proxy.URL+"/api/login", "", map[string]string{"username": "alice", "password": "alice-password"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
}
