package browsertest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
)

// TestStartRetriesWhoAmI: a tab that opens while the broker cannot say what the
// session may do (its whoami fails: here the first one, made to fail as a dropped
// connection would) shows the shell read-only, then asks again and gets the admin
// controls back without a reload.
func TestStartRetriesWhoAmI(t *testing.T) {
	t.Parallel()
	browser(t) // skips without Chromium, before the broker starts
	srv := daemontest.Start(t, daemontest.Options{})
	tb := newTab(t, srv.URL)
	tb.onNewDocument(`(() => {
		const f = window.fetch;
		window.qtWhoami = 0;
		window.fetch = (u, o) => {
			if (String(u).includes('/api/v1/auth/whoami') && window.qtWhoami++ === 0) {
				return Promise.reject(new TypeError('Failed to fetch'));
			}
			return f(u, o);
		};
	})();`)
	toggle := `[data-testid="toggle-push-maintenance"]`
	tb.open("/queues")
	tb.waitJS("the shell, read-only", `qt.ready('queues') && window.qtWhoami === 1`)
	require.False(t, eval[bool](tb, `qt.has('`+toggle+`')`), "no admin control while whoami has not answered")
	tb.waitJS("whoami asked again and the admin controls back", `window.qtWhoami >= 2 && qt.has('`+toggle+`')`)
	tb.clean("start with a failing whoami")
}
