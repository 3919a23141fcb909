package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
	require.Equal(t, "queen_1.2.3_amd64.deb", fileName("deb", "amd64", "1.2.3"))
	require.Equal(t, "queen_1.2.3_arm64.deb", fileName("deb", "arm64", "1.2.3"))
	require.Equal(t, "queen-1.2.3.x86_64.rpm", fileName("rpm", "amd64", "1.2.3"))
	require.Equal(t, "queen-1.2.3.aarch64.rpm", fileName("rpm", "arm64", "1.2.3"))
	require.False(t, validVersion("v1.2.3"))
	require.False(t, validVersion("1.2.3-rc1"))
}
