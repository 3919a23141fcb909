package config

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDocsProxyConfigurationIsCurrent(t *testing.T) {
	t.Parallel()
	got, err := os.ReadFile("../../../docs/proxy-configuration.md")
	require.NoError(t, err, "run: "+DocsCommand)
	require.Equal(t, Markdown(), string(got),
		"docs/proxy-configuration.md is stale; regenerate it with: "+DocsCommand)
}

// Every setting says what it accepts, so that every limit is in the reference pages.
func TestEverySettingNamesWhatItAccepts(t *testing.T) {
	t.Parallel()
	md := Markdown()
	for _, s := range settings {
		require.NotEmpty(t, s.accepts(), s.name)
		require.True(t, (s.value == nil) != (s.set == nil), "%s: exactly one of value and set", s.name)
		require.True(t, s.value == nil || s.kind == "", "%s: value names its own kind", s.name)
		require.Contains(t, md, "| `"+s.name+"` |", s.name)
	}
	for _, want := range []string{
		"| `QUEEN_PROXY_MAX_POP_TIMEOUT` | `120s` | duration from 1s to 1h0m0s |",
		"| `DB_POOL_SIZE` | `10` | integer between 2 and 1000 |",
		"| `QUEEN_PROXY_ADMIN_TOKEN` | *unset* | at least 32 characters, secret |",
		"| `QUEEN_PROXY_TLS_KEY_FILE` | *unset* | path of a PEM file, credential |",
		"When unset, `QUEEN_SERVER_URL` (Queen 0.15's name) is read.",
	} {
		require.Contains(t, md, want)
	}
}
