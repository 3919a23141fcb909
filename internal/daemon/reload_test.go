package daemon_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/testlog"
)

// reloadBundle is a broker served in process with a reload channel, started the way
// systemd starts it: the env file's variables in its environment and, when named,
// QUEEN_ENV_FILES pointing at the file.
type reloadBundle struct {
	base string
	file string // the env file
	logs *testlog.Buffer
	hup  chan os.Signal
}

// startReloadable writes fileContent to an env file, starts a broker with the file's
// variables plus the test database's, and stops it when the test ends, requiring a
// clean stop. nameFile sets QUEEN_ENV_FILES to the file.
func startReloadable(t *testing.T, fileContent string, nameFile bool) *reloadBundle {
	t.Helper()
	rb := &reloadBundle{file: filepath.Join(t.TempDir(), "queen.env"), logs: &testlog.Buffer{}, hup: make(chan os.Signal, 1)}
	writeFile(t, rb.file, fileContent)
	// The file's lines come first, as systemd's EnvironmentFile= wins over Environment=.
	environ := append(strings.Split(strings.TrimSpace(fileContent), "\n"), "DB_POOL_SIZE=4")
	if nameFile {
		environ = append(environ, "QUEEN_ENV_FILES="+rb.file)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", rb.logs)
		}
	})
	rb.base = daemontest.Start(t, daemontest.Options{Env: environ, Logs: rb.logs, Reload: rb.hup}).URL
	return rb
}

// waitForLog waits until the log holds want and returns the log.
func (rb *reloadBundle) waitForLog(t *testing.T, want string) string {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(rb.logs.String(), want) },
		10*time.Second, 10*time.Millisecond, "no %q in the log", want)
	return rb.logs.String()
}

// readyStatus answers GET /health/ready. The access log line of the request is
// written before the answer is sent.
func (rb *reloadBundle) readyStatus(t *testing.T) int {
	t.Helper()
	resp, err := http.Get(rb.base + "/health/ready")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}

// TestReloadAppliesLogLevel: SIGHUP re-reads the env file, applies the new LOG_LEVEL
// at once (the debug access-log lines stop) and names the setting that needs a
// restart; the broker serves throughout.
func TestReloadAppliesLogLevel(t *testing.T) {
	t.Parallel()
	rb := startReloadable(t, "LOG_LEVEL=debug\nDEFAULT_BATCH_SIZE=1\n", true)

	const accessLine = `"msg":"http request","component":"httpapi","method":"GET","route":"/health/ready"`
	// At debug every GET /health/ready is logged, daemontest's readiness check too.
	accessLines := func() int { return strings.Count(rb.logs.String(), accessLine) }
	started := accessLines()
	require.Equal(t, http.StatusOK, rb.readyStatus(t))
	require.Equal(t, started+1, accessLines(), "debug access log before the reload")

	writeFile(t, rb.file, "LOG_LEVEL=info\nDEFAULT_BATCH_SIZE=5\n")
	rb.hup <- syscall.SIGHUP
	log := rb.waitForLog(t, `"msg":"reloaded: log_level debug→info"`)
	require.Contains(t, log, `"msg":"received SIGHUP: re-reading the env files"`)
	require.Contains(t, log, `"msg":"changed in `+rb.file+` but needs a restart: DEFAULT_BATCH_SIZE"`)
	require.NotContains(t, log, "LOG_LEVEL but needs a restart")

	require.Equal(t, http.StatusOK, rb.readyStatus(t), "the broker serves after the reload")
	require.Equal(t, started+1, accessLines(), "no debug line at LOG_LEVEL=info")

	// Back to debug: the line announcing it shows, and so do debug lines again.
	writeFile(t, rb.file, "LOG_LEVEL=debug\nDEFAULT_BATCH_SIZE=1\n")
	rb.hup <- syscall.SIGHUP
	rb.waitForLog(t, `"msg":"reloaded: log_level info→debug"`)
	require.Equal(t, http.StatusOK, rb.readyStatus(t))
	require.Equal(t, started+2, accessLines(), "debug access log after the second reload")
	require.Equal(t, 1, strings.Count(rb.logs.String(), "needs a restart"),
		"DEFAULT_BATCH_SIZE is back to the running value")
}

// TestReloadWithoutEnvFiles: with no QUEEN_ENV_FILES a SIGHUP says that nothing was
// reloaded and why, and changes nothing.
func TestReloadWithoutEnvFiles(t *testing.T) {
	t.Parallel()
	rb := startReloadable(t, "LOG_LEVEL=info\n", false)
	writeFile(t, rb.file, "LOG_LEVEL=debug\n")
	rb.hup <- syscall.SIGHUP
	log := rb.waitForLog(t, `"level":"WARN","msg":"nothing reloaded: QUEEN_ENV_FILES names no env file`)
	require.NotContains(t, log, "reloaded: log_level")
	require.Equal(t, http.StatusOK, rb.readyStatus(t))
	require.NotContains(t, rb.logs.String(), `"msg":"http request"`, "still at LOG_LEVEL=info")
}

// TestReloadReportsAnInvalidFile: an env file a restart would refuse is reported as
// an error and applied in no part; an unknown variable added to it is warned about.
func TestReloadReportsAnInvalidFile(t *testing.T) {
	t.Parallel()
	rb := startReloadable(t, "LOG_LEVEL=info\n", true)

	writeFile(t, rb.file, "LOG_LEVEL=debug\nPG_USE_SSL=ture\n")
	rb.hup <- syscall.SIGHUP
	log := rb.waitForLog(t, `"level":"ERROR","msg":"nothing reloaded: the env files hold an invalid configuration`)
	require.Contains(t, log, `PG_USE_SSL=\"ture\": not a boolean`)
	require.NotContains(t, log, "reloaded: log_level")
	require.Equal(t, http.StatusOK, rb.readyStatus(t))
	require.NotContains(t, rb.logs.String(), `"msg":"http request"`, "LOG_LEVEL=debug was not applied")

	writeFile(t, rb.file, "LOG_LEVEL=info\nQUEEN_LOG_FROMAT=text\n")
	rb.hup <- syscall.SIGHUP
	log = rb.waitForLog(t, `"msg":"reloaded: nothing to apply"`)
	require.Contains(t, log, `"level":"WARN","msg":"unknown QUEEN_* variable ignored; a typo leaves the default in force",`+
		`"component":"reload","variable":"QUEEN_LOG_FROMAT","did_you_mean":"QUEEN_LOG_FORMAT"`)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}
