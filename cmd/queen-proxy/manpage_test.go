package main

import (
	"bytes"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/config"
)

// TestManPage keeps queen-proxy(8) in step with the code: -man prints roff with
// every flag but itself and every setting, and groff reads it without a warning.
func TestManPage(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.Equal(t, exitOK, realMain([]string{"-man"}, nil, strings.NewReader(""), &out, io.Discard))
	roff := out.String()
	require.True(t, strings.HasPrefix(roff, `.TH "QUEEN-PROXY" 8 `), roff[:min(80, len(roff))])
	for _, f := range []string{"version", "check-config", "print-config", "print-schema"} {
		require.Contains(t, roff, `.B "\-`+strings.ReplaceAll(f, "-", `\-`)+`"`)
	}
	require.NotContains(t, roff, `.B "\-man"`)
	require.NotContains(t, roff, `config\-docs`)
	for _, r := range config.References() {
		require.Contains(t, roff, `.B "`+r.Name+`"`, "setting %s missing from ENVIRONMENT", r.Name)
		require.NotEmpty(t, r.Accepts, r.Name)
	}
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("groff is not installed: the roff is not checked here (make test's lintian checks it)")
	}
	cmd := exec.Command(groff, "-man", "-Tutf8", "-K", "utf8", "-ww", "-z")
	cmd.Stdin = strings.NewReader(roff)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), "%s", &stderr)
	require.Empty(t, stderr.String(), "groff warnings")
}
