package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReloader(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		main, extra string // two env files, the second one optional
	}
	setup := func(t *testing.T, main, extra string) *testBundle {
		t.Helper()
		dir := t.TempDir()
		b := &testBundle{main: filepath.Join(dir, "queen.env"), extra: filepath.Join(dir, "queen@1.env")}
		write(t, b.main, main)
		if extra != "" {
			write(t, b.extra, extra)
		}
		return b
	}
	// start loads what systemd would give the process: the unit's Environment= lines,
	// then the files (which win), plus QUEEN_ENV_FILES naming them.
	start := func(t *testing.T, b *testBundle, unitEnv ...string) *Reloader {
		t.Helper()
		environ := append([]string{"QUEEN_ENV_FILES=" + b.main + "," + b.extra, "PATH=/usr/bin"}, unitEnv...)
		for _, f := range []string{b.main, b.extra} {
			if data, err := os.ReadFile(f); err == nil {
				environ = append(parseEnvFile(string(data)), environ...) // first occurrence wins
			}
		}
		c := mustLoad(t, environ...)
		r := c.NewReloader()
		require.NoError(t, r.StartErr())
		return r
	}

	t.Run("LogLevelChanged", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "LOG_LEVEL=debug\nPORT=7000\n", "")
		r := start(t, b)
		write(t, b.main, "LOG_LEVEL=info\nPORT=7000\n")
		res, err := r.Reload()
		require.NoError(t, err)
		require.Equal(t, "info", res.Config.LogLevel)
		require.Equal(t, []Change{{Name: "LOG_LEVEL", File: b.main}}, res.Changed)
		require.Equal(t, []string{b.main, b.extra}, res.Files)
		require.Equal(t, []string{b.extra}, res.Missing, "a missing file counts as empty")
	})
	t.Run("NothingChanged", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "# only a comment\nLOG_LEVEL=warn\n", "")
		res, err := start(t, b).Reload()
		require.NoError(t, err)
		require.Empty(t, res.Changed)
		require.Equal(t, "warn", res.Config.LogLevel)
	})
	t.Run("EachChangeNamesItsFile", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "DB_POOL_SIZE=10\nPG_PASSWORD=old\n", "PORT=7001\n")
		r := start(t, b)
		write(t, b.main, "DB_POOL_SIZE=20\nPG_PASSWORD=new\nHOST=127.0.0.1\n")
		write(t, b.extra, "PORT=7002\nDB_POOL_SIZE=30\n")
		res, err := r.Reload()
		require.NoError(t, err)
		require.Equal(t, []Change{
			{Name: "HOST", File: b.main},
			{Name: "PORT", File: b.extra},
			{Name: "PG_PASSWORD", File: b.main},   // named, never shown
			{Name: "DB_POOL_SIZE", File: b.extra}, // the later file wins, as with systemd
		}, res.Changed)
		require.Equal(t, 30, res.Config.DBPoolSize)
	})
	t.Run("RemovedFromAFileIsADefaultAgain", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "DB_POOL_SIZE=10\nLOG_LEVEL=debug\n", "")
		r := start(t, b)
		write(t, b.main, "LOG_LEVEL=debug\n")
		res, err := r.Reload()
		require.NoError(t, err)
		require.Equal(t, []Change{{Name: "DB_POOL_SIZE", File: b.main}}, res.Changed)
		require.Equal(t, 150, res.Config.DBPoolSize)
	})
	t.Run("VariablesFromTheUnitAreKept", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "LOG_LEVEL=info\n", "")
		r := start(t, b, "FILE_BUFFER_DIR=/var/lib/queen/spool", "QUEEN_INSTANCE=1")
		write(t, b.main, "LOG_LEVEL=info\n# edited\n")
		res, err := r.Reload()
		require.NoError(t, err)
		require.Empty(t, res.Changed)
		require.Equal(t, "/var/lib/queen/spool", res.Config.FileBufferDir)
		require.Equal(t, "1", res.Config.Instance)
	})
	t.Run("NewUnknownVariableIsListed", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "LOG_LEVEL=info\n", "")
		r := start(t, b)
		write(t, b.main, "LOG_LEVEL=info\nQUEEN_LOG_FROMAT=text\n")
		res, err := r.Reload()
		require.NoError(t, err)
		require.Empty(t, res.Changed)
		require.Equal(t, []UnknownVariable{{Name: "QUEEN_LOG_FROMAT", Hint: "QUEEN_LOG_FORMAT"}},
			res.Config.UnknownVariables())
	})
	t.Run("InvalidFileIsAnError", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "LOG_LEVEL=info\n", "")
		r := start(t, b)
		write(t, b.main, "LOG_LEVEL=loud\n")
		_, err := r.Reload()
		require.ErrorIs(t, err, ErrInvalid)
		require.Contains(t, err.Error(), `LOG_LEVEL="loud"`)
	})
	t.Run("UnreadableFileIsAnError", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "LOG_LEVEL=info\n", "")
		r := start(t, b)
		require.NoError(t, os.Remove(b.main))
		require.NoError(t, os.Mkdir(b.main, 0o755)) // reading a directory fails, even as root
		_, err := r.Reload()
		require.Error(t, err)
		require.NotErrorIs(t, err, ErrInvalid)
		require.Contains(t, err.Error(), "read env file")
	})
	t.Run("NoEnvFiles", func(t *testing.T) {
		t.Parallel()
		r := mustLoad(t, "LOG_LEVEL=debug").NewReloader()
		require.NoError(t, r.StartErr())
		require.Empty(t, r.Files())
		_, err := r.Reload()
		require.ErrorIs(t, err, ErrNoEnvFiles)
	})
}

func TestEnvFilesMustBeAbsolute(t *testing.T) {
	t.Parallel()

	require.Equal(t, []string{"/etc/queen/queen.env", "/etc/queen/queen@1.env"},
		mustLoad(t, "QUEEN_ENV_FILES=/etc/queen/queen.env, /etc/queen/queen@1.env").EnvFiles)
	require.Contains(t, loadErr(t, "QUEEN_ENV_FILES=queen.env"), `"queen.env" is not a clean absolute path`)
	require.Contains(t, loadErr(t, "QUEEN_ENV_FILES=/etc/../etc/queen.env"), "not a clean absolute path")
}

func write(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}
