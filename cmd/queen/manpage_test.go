package main

import (
	"bytes"
	"flag"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/config"
)

// TestManPageCoversEveryFlag keeps queen(8) in step with the code: every visible
// flag has its OPTIONS text and every OPTIONS text a flag, every setting is in
// ENVIRONMENT, the build helpers stay out, and groff reads the roff without a
// warning.
func TestManPageCoversEveryFlag(t *testing.T) {
	t.Parallel()
	fs, _ := newFlagSet(io.Discard)
	var visible []string
	fs.VisitAll(func(f *flag.Flag) {
		if !isHidden(f.Name) {
			visible = append(visible, f.Name)
			require.NotEmpty(t, optionDocs(f.Name), "flag -%s has no OPTIONS text in optionDocs", f.Name)
		}
	})
	for _, name := range []string{"version", "check-config", "print-config", "print-schema"} {
		require.Contains(t, visible, name)
	}
	require.Nil(t, optionDocs("no-such-flag"))

	page := manPage(fs)
	roff, text := page.Roff(), page.Text()
	for _, name := range visible {
		require.Regexp(t, regexp.QuoteMeta(`.B "\-`+strings.ReplaceAll(name, "-", `\-`))+`[" ]`, roff) // "-port PORT"
		require.Regexp(t, `\n       -`+regexp.QuoteMeta(name)+`[\n ]`, text)                           // a short tag shares its line
	}
	for _, r := range config.References() {
		require.Contains(t, text, "\n       "+r.Name, "setting %s missing from ENVIRONMENT", r.Name)
	}
	for _, hidden := range []string{"config-docs", "env-file", "-man"} {
		require.NotContains(t, text, hidden)
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
