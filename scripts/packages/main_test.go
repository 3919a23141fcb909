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
	got := string(changelog("1.2.3-1", "abc123456789", at, nil))
	require.True(t, strings.HasPrefix(got, "- semver: \"1.2.3-1\"\n  date: 2026-01-02T03:04:05Z\n"), got)
	require.Contains(t, got, `note: "Build of commit abc123456789."`)
	require.Contains(t, got, `- semver: "0.0.0-0"`, "the initial packaging entry (from git history)")
}

const testChangelog = `# Changelog

## [Unreleased]

- not released yet

## [1.2.3] - 2026-01-02

### Added

- the ` + "`queen.send`" + ` function, see [sql.md](docs/sql.md)
- a **long** bullet that goes on and on past the width a deb changelog line may have,
  continued on an indented line

### Fixed

- a fix

## [1.2.2] - 2025-12-01

- older
`

func TestParseChangelog(t *testing.T) {
	t.Parallel()
	rs, err := parseChangelog([]byte(testChangelog))
	require.NoError(t, err)
	require.Len(t, rs, 2, "Unreleased is not a release")
	require.Equal(t, "1.2.3", rs[0].version)
	require.Equal(t, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), rs[0].date)
	require.Equal(t, []string{
		"the queen.send function, see sql.md",
		"a long bullet that goes on and on past the width a deb changelog line may\nhave, continued on an indented line",
		"a fix",
	}, rs[0].notes)
	require.Equal(t, []string{"older"}, rs[1].notes)

	_, err = parseChangelog([]byte("## 1.2.3\n"))
	require.ErrorContains(t, err, "want \"## [X.Y.Z] - YYYY-MM-DD\"")
}

func TestChangelogTakesTheReleaseFromChangelogMD(t *testing.T) {
	t.Parallel()
	rs, err := parseChangelog([]byte(testChangelog))
	require.NoError(t, err)
	at := time.Date(2026, 1, 3, 4, 5, 6, 0, time.UTC)

	got := string(changelog("1.2.3-1", "abc123456789", at, rs))
	require.True(t, strings.HasPrefix(got, "- semver: \"1.2.3-1\"\n  date: 2026-01-03T04:05:06Z\n"), got)
	require.Contains(t, got, `note: "the queen.send function, see sql.md"`)
	require.NotContains(t, got, "Build of commit", "a release has its CHANGELOG.md entry, not the dev line")
	require.Contains(t, got, "- semver: \"1.2.2-1\"\n  date: 2025-12-01T00:00:00Z\n", "older releases follow")
	require.Less(t, strings.Index(got, `"1.2.3-1"`), strings.Index(got, `"1.2.2-1"`))

	dev := string(changelog("1.2.3+git5.20260103T040506.abc123456789-1", "abc123456789", at, rs))
	require.Contains(t, dev, `note: "Build of commit abc123456789."`, "a dev build after 1.2.3 has one line")
	require.Contains(t, dev, `- semver: "1.2.3-1"`, "and the releases before it")

	early := string(changelog("0.0.0+git20260103T040506.abc123456789-1", "abc123456789", at, rs))
	require.NotContains(t, early, `"1.2.3-1"`, "no release newer than the build: dpkg wants versions to go down")
}

// TestChangelogMDFitsThePackages: the project's CHANGELOG.md parses, and each
// bullet fits one line of a deb changelog (lintian wants lines under 80 columns).
func TestChangelogMDFitsThePackages(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../CHANGELOG.md")
	require.NoError(t, err)
	rs, err := parseChangelog(b)
	require.NoError(t, err)
	require.NotEmpty(t, rs)
	for _, r := range rs {
		require.NotEmpty(t, r.notes, "release %s has no bullet", r.version)
		for _, n := range r.notes {
			require.NotContains(t, n, "\n", "release %s: bullet longer than %d columns: %q", r.version, noteWidth, n)
		}
	}
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
