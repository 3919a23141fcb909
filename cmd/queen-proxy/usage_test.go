package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUsage: -h and --help print the commands and every flag but -man to stdout and
// exit 0; a usage error prints the same usage to stderr and exits 2.
func TestUsage(t *testing.T) {
	t.Parallel()
	wantUsage := func(t *testing.T, usage string) {
		t.Helper()
		require.True(t, strings.HasPrefix(usage, "Usage: queen-proxy [serve]\n"), usage)
		for _, s := range []string{"  serve ", "  tenant, key, user, usage, cell\n", "  help ", "  -h, -help ",
			"  -version ", "  -check-config ", "  -print-config ", "  -print-schema ", "man queen-proxy"} {
			require.Contains(t, usage, s)
		}
		require.NotContains(t, usage, "-man", "the hidden flag is listed")
		require.NotContains(t, usage, "roff")
	}

	for _, args := range [][]string{{"-h"}, {"--help"}, {"-help"}} {
		t.Run("Help"+strings.Join(args, ""), func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			require.Equal(t, exitOK, realMain(args, nil, nil, &out, &errOut))
			require.Empty(t, errOut.String())
			wantUsage(t, out.String())
		})
	}

	for _, tc := range []struct {
		name string
		args []string
		err  string
	}{
		{"UnknownFlag", []string{"-port=1"}, "flag provided but not defined: -port\n"},
		{"UnexpectedArgument", []string{"migrate"}, `queen-proxy: unexpected arguments ["migrate"]` + "\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			require.Equal(t, exitUsage, realMain(tc.args, nil, nil, &out, &errOut))
			require.Empty(t, out.String())
			msg, usage, ok := strings.Cut(errOut.String(), tc.err)
			require.True(t, ok, "stderr %q lacks %q", errOut.String(), tc.err)
			require.Empty(t, msg)
			wantUsage(t, usage)
		})
	}
}
