package cli

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestManPageListsEveryCommand keeps queenctl(1) in step with the command tree:
// `queenctl -man` prints roff with every leaf command and every global flag, and
// groff reads it without a warning.
func TestManPageListsEveryCommand(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.Equal(t, ExitOK, Main(context.Background(), []string{ManFlag}, nil, strings.NewReader(""), &out, io.Discard))
	roff := out.String()
	require.True(t, strings.HasPrefix(roff, `.TH "QUEENCTL" 1 `), roff[:min(80, len(roff))])
	leaves := 0
	for _, n := range walk(rootCommand()) {
		if len(n.path) == 0 || len(n.cmd.subs) > 0 {
			continue
		}
		leaves++
		tag := strings.ReplaceAll("queenctl "+strings.Join(n.path, " "), "-", `\-`)
		require.Contains(t, roff, `.B "`+tag, "command %v missing", n.path)
	}
	require.Greater(t, leaves, 30)
	for _, f := range []string{"server", "token", "context", "config", "output", "no-color", "progress", "timeout"} {
		require.Contains(t, roff, `\-\-`+strings.ReplaceAll(f, "-", `\-`))
	}
	require.Contains(t, roff, ".SH \"CONNECTION SETTINGS AND EXIT STATUS\"")
	require.Contains(t, roff, "130  interrupted")

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
