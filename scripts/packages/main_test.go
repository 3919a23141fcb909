package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	proxyconfig "github.com/queenmq/queen/internal/proxy/config"
)

func TestVersionFromDescribe(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct{ describe, want string }{
		{"v1.2.3-0-gabc1234", "1.2.3"},
		{"v1.2.3-0-gabc1234-dirty", "1.2.3+git0.20260102T030405.abc123456789.dirty"},
		{"v1.2.3-5-gabc1234", "1.2.3+git5.20260102T030405.abc123456789"},
		{"v1.2.3-5-gabc1234-dirty", "1.2.3+git5.20260102T030405.abc123456789.dirty"},
	} {
		t.Run(tc.describe, func(t *testing.T) {
			t.Parallel()
			got := versionFromDescribe(tc.describe, "abc123456789", at)
			require.Equal(t, tc.want, got)
			require.True(t, validVersion(got))
		})
	}
	got := versionFromDescribe("", "abc123456789", at)
	require.Regexp(t, `^0\.0\.0\+git20260102T030405\.abc123456789(\.dirty)?$`, got)
	require.True(t, validVersion(got))
}

func TestFileName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "queen_1.2.3-1_amd64.deb", fileName("deb", "amd64", "1.2.3-1"))
	require.Equal(t, "queen_1.2.3-1_arm64.deb", fileName("deb", "arm64", "1.2.3-1"))
	require.Equal(t, "queen-1.2.3-1.x86_64.rpm", fileName("rpm", "amd64", "1.2.3-1"))
	require.Equal(t, "queen-1.2.3-1.aarch64.rpm", fileName("rpm", "arm64", "1.2.3-1"))
	require.False(t, validVersion("v1.2.3"))
	require.False(t, validVersion("1.2.3-rc1"))
}

func TestChangelogStartsWithThisBuild(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	got := string(changelog("1.2.3-1", "abc123456789", at))
	require.True(t, strings.HasPrefix(got, "- semver: \"1.2.3-1\"\n  date: 2026-01-02T03:04:05Z\n"), got)
	require.Contains(t, got, `note: "Build of commit abc123456789."`)
	require.Contains(t, got, `- semver: "0.0.0-0"`, "the initial packaging entry (from git history)")
}

// TestProxyEnvFileNamesRealSettings: every variable etc/queen-proxy.env shows is one
// queen-proxy reads.
func TestProxyEnvFileNamesRealSettings(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../etc/queen-proxy.env")
	require.NoError(t, err)
	known := map[string]bool{}
	for _, r := range proxyconfig.References() {
		known[r.Name] = true
	}
	n := 0
	for line := range strings.SplitSeq(string(b), "\n") {
		if name, _, ok := strings.Cut(strings.TrimPrefix(line, "#"), "="); ok && strings.HasPrefix(line, "#") && !strings.Contains(name, " ") {
			n++
			require.True(t, known[name], "etc/queen-proxy.env names %s, which queen-proxy does not read", name)
		}
		require.False(t, line != "" && !strings.HasPrefix(line, "#"), "etc/queen-proxy.env must be comments only: %q", line)
	}
	require.Greater(t, n, 5)
}
