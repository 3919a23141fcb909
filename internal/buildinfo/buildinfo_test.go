package buildinfo

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestString(t *testing.T) {
	t.Parallel()

	s := String()
	require.True(t, strings.HasPrefix(s, "queen "+Version+" "), s)
	require.Contains(t, s, "commit "+Commit)
	require.Contains(t, s, "built "+Date)
	require.Contains(t, s, runtime.Version())
	require.NotContains(t, s, "\n")
}

func TestDefaultsWithoutLdflags(t *testing.T) {
	t.Parallel()

	// go test never stamps -X, so the documented defaults must show.
	require.Equal(t, "dev", Version)
	require.Equal(t, "unknown", Commit)
	require.Equal(t, "unknown", Date)
}
