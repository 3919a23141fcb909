package config

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEnvFileIsCurrent(t *testing.T) {
	t.Parallel()

	got, err := os.ReadFile("../../etc/queen.env")
	require.NoError(t, err, "run: "+EnvFileCommand)
	require.Equal(t, EnvFile(), string(got),
		"etc/queen.env is stale; regenerate it with: "+EnvFileCommand)
}

// TestEnvFileListsEverySettingCommentedOut: each setting appears exactly once, as a
// commented-out NAME=default line, and nothing is set by the packaged file.
func TestEnvFileListsEverySettingCommentedOut(t *testing.T) {
	t.Parallel()

	env := EnvFile()
	var active []string
	for _, line := range strings.Split(env, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			active = append(active, line)
		}
	}
	require.Empty(t, active, "the packaged env file must set nothing")
	for _, s := range table() {
		require.Equal(t, 1, strings.Count(env, "\n#"+s.name+"="), s.name)
	}

	// Uncommenting every line gives a valid configuration equal to the defaults
	// (except for the settings whose empty value has a meaning of its own).
	var environ []string
	for _, line := range strings.Split(env, "\n") {
		name, value, ok := strings.Cut(strings.TrimPrefix(line, "#"), "=")
		if !ok || strings.ContainsAny(name, " :") || !strings.HasPrefix(line, "#") {
			continue
		}
		// An empty value of such a setting is not its default (WEBAPP_ROOT=).
		if st, isSetting := settingByName(name); isSetting && !(st.emptyOK && st.def == "") {
			environ = append(environ, name+"="+strings.Trim(value, `"`))
		}
	}
	c, err := Load(environ)
	require.NoError(t, err)
	d := mustLoad(t)
	require.Equal(t, d.String(), strings.ReplaceAll(c.String(), "# env", "# default"))
}
